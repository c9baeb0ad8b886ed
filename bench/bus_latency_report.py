"""The figures of bench/bus_latency.py: one trial's numbers, and how they are printed (each
backend's lines as they always were, then both backends side by side)."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass

from pgserver import load

CPU_RATIO_TARGET = 1.3  # CPU per message at the most recipients vs at the fewest


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass(frozen=True)
class Trial:
    recipients: int
    latencies_ms: list[float]
    cpu: float  # seconds, summed over the recipient processes
    claims: int  # claims made, and those that found nothing (a wake-up for nothing, or
    empty: int  # the look after a batch that finds the inbox empty)
    switches: int  # context switches of the recipients: voluntary (waits, locks) and
    preempted: int  # involuntary (another process took the core)
    load: str = ""  # the load average right after the trial
    server_cpu: float | None = None  # the PostgreSQL server's, when it is the bench's own

    @property
    def cpu_per_message_ms(self) -> float:
        return self.cpu / max(1, len(self.latencies_ms)) * 1000

    @property
    def server_per_message_ms(self) -> float | None:
        if self.server_cpu is None:
            return None
        return self.server_cpu / max(1, len(self.latencies_ms)) * 1000

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def passed(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_trials(args: argparse.Namespace, trials: list[Trial], before: list[str]) -> None:
    """Today's figures for one backend (the SQLite lines as they always were)."""
    for trial, was in zip(trials, before, strict=True):
        count, ms = trial.recipients, trial.latencies_ms
        print(f"recipients={count}: delivered {len(ms)}/{args.messages}  ({was} -> {trial.load})")
        print(
            f"  latency ms: p50 {percentile(ms, 0.5):.1f}  p90 {percentile(ms, 0.9):.1f}  "
            f"p99 {trial.p99:.1f}  max {max(ms):.1f}  mean {statistics.mean(ms):.1f}"
        )
        print(
            f"  recipients' CPU {trial.cpu:.2f} s = {trial.cpu_per_message_ms:.3f} ms "
            f"per delivered message; {trial.claims} claims, {trial.empty} empty; "
            f"context switches {trial.switches}, preempted {trial.preempted}"
        )
        if trial.server_cpu is not None and (per := trial.server_per_message_ms) is not None:
            print(
                f"  server's CPU {trial.server_cpu:.2f} s = {per:.3f} ms per delivered "
                f"message; both together {trial.cpu_per_message_ms + per:.3f} ms  ({trial.load})"
            )
    if len(trials) >= 2:
        low, high = trials[0], trials[-1]
        ratio = high.cpu_per_message_ms / low.cpu_per_message_ms
        print(
            f"cpu per message {high.recipients} vs {low.recipients} = {ratio:.2f}x "
            f"(<= {CPU_RATIO_TARGET}x): {verdict(ratio <= CPU_RATIO_TARGET)}  ({load()})"
        )


def print_side_by_side(sqlite: list[Trial], postgres: list[Trial]) -> None:
    """The two backends' figures in columns, each with the load average after its trial."""
    print("side by side (each figure with the load average right after its trial):")
    print(f"  {'':<38} {'sqlite':<26} postgresql")
    for lite, pg in zip(sqlite, postgres, strict=True):
        n = lite.recipients
        rows: list[tuple[str, float | None, float | None]] = [
            (f"delivery p50 ms, {n} recipients", percentile(lite.latencies_ms, 0.5),
             percentile(pg.latencies_ms, 0.5)),
            (f"delivery p99 ms, {n} recipients", lite.p99, pg.p99),
            (f"consumers' CPU ms/message, {n} recip.", lite.cpu_per_message_ms,
             pg.cpu_per_message_ms),
            (f"server's CPU ms/message, {n} recip.", None, pg.server_per_message_ms),
        ]  # fmt: skip
        for label, a, b in rows:
            left = "-" if a is None else f"{a:.3f} [{lite.load.split(' ', 2)[2]}]"
            right = "- (not measured)" if b is None else f"{b:.3f} [{pg.load.split(' ', 2)[2]}]"
            if label.startswith("server") and a is None:
                left = "- (no server)"
            print(f"  {label:<38} {left:<26} {right}")
