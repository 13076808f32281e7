"""ITBench SRE runs: ground truth, diagnosis scores, and run folders loaded as traces.

The scoring rules live in :mod:`mast.traces.itbench_scoring`; the trial-folder loader in
:mod:`mast.traces.loaders._itbench`. This module is the public face of both.

>>> from mast.traces import itbench
>>> gt = itbench.load_ground_truth({"groups": [{"id": "cfg", "kind": "ConfigMap",
...     "name": "flagd-config", "namespace": "otel-demo", "root_cause": True}]})
>>> itbench.score_diagnosis({"entities": [
...     {"name": "otel-demo/ConfigMap/flagd-config", "contributing_factor": True}]}, gt).recall
1.0
"""

from mast.traces.itbench_scoring import (
    DiagnosisScore,
    GroundTruth,
    GroundTruthGroup,
    SuccessRule,
    find_ground_truth,
    find_runs,
    is_run_folder,
    load_ground_truth,
    read_diagnosis,
    score_diagnosis,
)
from mast.traces.loaders._itbench import load_run, load_runs, load_trial

__all__ = [
    "DiagnosisScore",
    "GroundTruth",
    "GroundTruthGroup",
    "SuccessRule",
    "find_ground_truth",
    "find_runs",
    "is_run_folder",
    "load_ground_truth",
    "load_run",
    "load_runs",
    "load_trial",
    "read_diagnosis",
    "score_diagnosis",
]
