"""Rate-limit saturation (issue 37): a server that enforces requests- and tokens-per-minute
limits the way providers do (429 + ``Retry-After`` past a sliding window, tokens counted
from the request: prompt + ``max_tokens``) and answers after a log-normal latency.

Time is scaled to keep the run short: the window is ``60 s × scale`` and the latencies are
``× scale`` (median 4 s, p95 15 s for a MAD-size trace at scale 1). Limits stay per window,
so a rate as a share of the binding limit is the same at any scale. Rows: requests and
tokens per window sustained after the first window as a share of the limit, the share of
requests answered 429, failures and wall time — mast with the limits given (``rpm`` /
``tpm``), mast without (it adapts from the 429s), and the official annotator (one trace at
a time; the OpenAI SDK's own two retries are all it has) under the same server.
"""

from __future__ import annotations

import json
import os
from collections import deque
from typing import Any

import _corpus
from _common import Row, fmt_s, python_child
from _official import Official
from _server import ServerProcess

MEDIAN_S, P95_S = 4.0, 15.0


def fifo_ceiling(sizes: list[int], window: float, tpm: int, rpm: int) -> float | None:
    """The binding share after the first window that a perfect client reaches with these
    requests (token counts, in this order) against this server: no delay from its grant to
    the server, every request sent the instant the sliding window has room for it, one at
    a time in order. Below 100% because requests are whole: when the next one does not fit
    it waits for old ones to leave, and what they free beyond its size stays unused until
    then (about half a request per window on average)."""
    log: deque[tuple[float, int]] = deque()
    used, now, times = 0, 0.0, []
    for size in sizes:
        while True:
            while log and log[0][0] <= now - window + 1e-9:
                used -= log.popleft()[1]
            if (used + size <= tpm or not log) and len(log) < rpm:
                break
            now = log[0][0] + window
        log.append((now, size))
        used += size
        times.append(now)
    start, end = times[0] + window, times[-1]
    if end - start <= window / 4:
        return None
    inside = [i for i, t in enumerate(times) if start <= t < end]
    tokens = sum(sizes[i] for i in inside) / (end - start) * window / tpm
    return max(tokens, len(inside) / (end - start) * window / rpm)


def _accounting(
    events: list[dict[str, Any]], window: float, rpm: int, tpm: int, concurrency: int
) -> dict[str, Any]:
    """From the server's log: rates after the first window as shares of the limits, up to
    the last ``concurrency`` accepted requests (from there on fewer traces are left than
    workers, and nothing holds the rate at the limit)."""
    if not events:
        return {"requests": 0, "refused": 0, "share_429": None, "req_share": None,
                "tok_share": None, "binding_share": None}  # fmt: skip
    start = events[0]["t"]
    ok = [e for e in events if e["ok"]]
    refused = len(events) - len(ok)
    end = ok[-concurrency - 1]["t"] if len(ok) > concurrency else start
    later = [e for e in ok if start + window <= e["t"] < end]
    late_events = [e for e in events if start + window <= e["t"] < end]
    span = end - (start + window)
    if span > window / 4 and later:
        req_rate = len(later) / span * window  # per window
        tok_rate = sum(e["tokens"] for e in later) / span * window
        req_share, tok_share = req_rate / rpm, tok_rate / tpm
        binding = max(req_share, tok_share)
    else:
        req_share = tok_share = binding = None  # the run ended within the first window
    return {
        "requests": len(events),
        "accepted": len(ok),
        "refused": refused,
        "share_429": refused / len(events),
        "req_share": req_share,
        "tok_share": tok_share,
        "binding_share": binding,
        "share_429_after_first_window": (
            sum(not e["ok"] for e in late_events) / len(late_events) if late_events else None
        ),
        "mean_tokens": sum(e["tokens"] for e in ok) / len(ok) if ok else None,
        # The same requests from a client with no delay (what whole requests allow).
        "ceiling": fifo_ceiling([e["tokens"] for e in ok], window, tpm, rpm),
    }


def _pct(x: float | None) -> str:
    return "n/a (ended within the first window)" if x is None else f"{x:.0%}"


def ratelimit(cfg: Any, official: Official, rows: list[Row], data: dict[str, Any]) -> None:
    results: dict[str, Any] = {"settings": []}
    conc = cfg.rate_concurrency
    for rpm, tpm, n, scale in cfg.rate_settings:
        window = 60.0 * scale
        work = cfg.work / f"ratelimit-{rpm}"
        work.mkdir(parents=True, exist_ok=True)
        mad = work / "mad.json"
        _corpus.write_mad_sized(mad, n, big=0)  # no ~1 MB traces: they are their own row
        setting: dict[str, Any] = {"rpm": rpm, "tpm": tpm, "traces": n, "scale": scale}
        runs = [
            ("given", ["--rpm", str(rpm), "--tpm", str(tpm)], True),
            ("adaptive", [], True),
            ("bare", [], False),  # adaptive, against a server that sends no rate headers
        ]
        for name, extra, headers in runs:
            load_before = os.getloadavg()
            with ServerProcess(
                latency=MEDIAN_S * scale,
                p95=P95_S * scale,
                rpm=rpm,
                tpm=tpm,
                window=window,
                workdir=work,
                rate_headers=headers,
            ) as server:
                ours = python_child(
                    [
                        *("many", "--data", str(mad), "--base-url", server.openai_base_url),
                        *("--model", cfg.model, "--fewshot", str(cfg.fewshot)),
                        *("--concurrency", str(cfg.rate_concurrency)),
                        *("--workdir", str(work / name), "--rate-window", str(window)),
                        *extra,
                    ]
                ).result
            for key in ("per_trace_s", "usage_by_trace", "profile"):
                ours.pop(key, None)
            acct = _accounting(server.events, window, rpm, tpm, conc)
            load = {"load_before": load_before, "load_after": os.getloadavg()}
            setting[name] = {"run": ours, **acct, **load}
        if cfg.rate_official:
            # One at a time takes N·E[L]: the official side gets the first traces only.
            first = work / "first.json"
            records = json.loads(mad.read_text(encoding="utf-8"))[: cfg.rate_official]
            first.write_text(json.dumps(records), encoding="utf-8")
            setting["official_traces"] = len(records)
            with ServerProcess(
                latency=MEDIAN_S * scale, p95=P95_S * scale, rpm=rpm, tpm=tpm, window=window,
                workdir=work,
            ) as server:  # fmt: skip
                off = official.annotate(first, base_url=server.openai_base_url, model=cfg.model)
            result = off.result
            result.pop("per_trace_s", None)
            acct = _accounting(server.events, window, rpm, tpm, 1)
            setting["official"] = {"run": result, **acct}
        results["settings"].append(setting)
        _rows(setting, rows)
    data["ratelimit"] = results


def _rows(s: dict[str, Any], rows: list[Row]) -> None:
    rpm, tpm, n, scale = s["rpm"], s["tpm"], s["traces"], s["scale"]
    off = s.get("official")
    off_text = (
        f"{s['official_traces']} traces one at a time: {fmt_s(off['run']['wall_s'])}, "
        f"{off['run']['errors']} failed, "
        f"{_pct(off['share_429'])} of {off['requests']} requests 429'd, "
        f"{_pct(off['binding_share'])} of the binding limit"
        if off
        else "not run"
    )
    labels = (
        ("given", "with --rpm/--tpm"),
        ("adaptive", "without --rpm (the server's x-ratelimit-* headers and 429 messages)"),
        ("bare", "without --rpm, server sends no rate headers (adapts from 429s alone)"),
    )
    pad = max(0.05, 0.01 * 60.0 * scale) / (60.0 * scale)  # RateLimiter's default pad
    for name, label in labels:
        if name not in s:
            continue
        r = s[name]
        run = r["run"]
        failed = sum(run["failed"].values()) + (n - run["traces"])
        binding = r["binding_share"]
        share = r["share_429"]
        ok: bool | None = binding is not None and binding >= 0.95 and share <= 0.01
        ok = None if binding is None else ok and failed == 0  # None: not measurable
        units = (("found_rpm", "req"), ("found_tpm", "tokens"))
        found = [f"{run[k] * scale:,.0f} {unit}/window" for k, unit in units if run.get(k)]
        how = "stated by the headers" if run.get("limits_stated") else "found"
        found_text = f"; {how}: {', '.join(found)}" if found else ""
        ceiling = r.get("ceiling")
        ceiling_text = (
            f"; a client with no delay sending the same requests reaches {_pct(ceiling)}"
            if ceiling is not None
            else ""
        )
        rows.append(
            Row(
                "ratelimit",
                f"Rate limits {rpm} RPM / {tpm // 1000}k TPM (time ×{scale:g}), {n} MAD-size "
                f"traces, log-normal latency (median 4 s, p95 15 s scaled) — {label}",
                f"{_pct(binding)} of the binding limit after the first window (requests "
                f"{_pct(r['req_share'])}, tokens {_pct(r['tok_share'])}); "
                f"{r['refused']} of {r['requests']} requests 429'd ({_pct(share)}; "
                f"{_pct(r['share_429_after_first_window'])} after the first window); "
                f"{failed} failed; {fmt_s(run['wall_s'])}{found_text}{ceiling_text}; CPU "
                f"{run['cpu_s']:.0f} s (pool {run['pool_cpu_s']:.0f} s), load "
                f"{r['load_before'][0]:.1f}/{r['load_after'][0]:.1f} before/after",
                off_text,
                _pct(binding),
                "≥ 95% of the binding limit, ≤ 1% 429'd, 0 failures",
                ok,
                "" if ok else _why(binding, share, failed, ceiling, pad, r.get("mean_tokens")),
            )
        )


def _why(
    binding: float | None,
    share: float | None,
    failed: int,
    ceiling: float | None = None,
    pad: float = 0.0,
    mean_tokens: float | None = None,
) -> str:
    parts = []
    if binding is None or binding < 0.95:
        text = f"sustained {_pct(binding)} of the binding limit"
        if binding is not None and ceiling is not None and ceiling < 0.99:
            # Measured on the same requests: whole requests in a sliding window, and the
            # limiter's window counted longer by its grant-to-arrival pad.
            text += (
                f" — {binding / ceiling:.0%} of the {_pct(ceiling)} a client with no delay "
                f"reaches with these requests (whole requests of {mean_tokens or 0:,.0f} "
                "tokens on average in a sliding window); the limiter's pad for the "
                "grant-to-arrival delay is "
                f"{pad:.1%} of the window"
            )
        parts.append(text)
    if share is not None and share > 0.01:
        parts.append(f"{share:.1%} of requests 429'd")
    if failed:
        parts.append(f"{failed} failed")
    return "; ".join(parts)


__all__ = ["fifo_ceiling", "ratelimit"]
