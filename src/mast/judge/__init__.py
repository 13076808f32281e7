"""One trace in, one :class:`~mast.judge.annotation.Annotation` out: the
:class:`~mast.judge.judge.Judge`, its prompts and few-shot examples, the providers (the only
code that knows an SDK), answer parsing and grounding, windows, redaction and prices.
"""
