"""One trace in, one :class:`~mast.judge.annotation.Annotation` out.

The :class:`~mast.judge.judge.Judge`, its windows and records live here; below them
``prompt/`` (what is sent), ``reply/`` (what is read back), ``providers/`` (the only code
that knows an SDK) and ``offload/`` (threads and worker processes).
"""

from mast._lazy import submodule_getattr
from mast.privacy.log_scrub import install as _install_log_scrub

# mast's and the HTTP/SDK clients' log records never carry a URL's credentials.
_install_log_scrub()
__getattr__ = submodule_getattr(__name__)  # `mast.judge.<module>` without an import
