"""One trace in, one :class:`~mast.judge.annotation.Annotation` out: the
:class:`~mast.judge.judge.Judge`, its prompts and few-shot examples, the providers (the only
code that knows an SDK), answer parsing and grounding, windows, redaction and prices.
"""

from mast._lazy import submodule_getattr
from mast.privacy.log_scrub import install as _install_log_scrub

# mast's and the HTTP/SDK clients' log records never carry a URL's credentials.
_install_log_scrub()
__getattr__ = submodule_getattr(__name__)  # `mast.judge.<module>` without an import
