"""The dashboard figures, per project and per day, each defined once.

A definition is a function of a `Scope` (project ids, or None for every project, and a
window of days) returning {project_id: {day: raw}}. Each runs one or two aggregate queries
grouped by project and `TruncDate` (days in settings.TIME_ZONE), never a query per day or
per project, so a dashboard's query count does not grow with either. Where several figures
come from the same rows (promoted and rejected, contradictions and open questions) the
rows are read once per scope (`Scope.once`).

A raw value is what can be combined across projects: a count, a (numerator, denominator)
pair, or the list of samples a percentile or median is taken over. The metric's `Kind`
says how to combine raws and read a value from them.

Percentiles and medians are computed in Python over the day's values, fetched in one
`values_list` query: identical on SQLite (which has no percentile function) and PostgreSQL,
and fine at this scale (a day's sweeps and retrievals, not millions of rows).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from statistics import median
from typing import Any

from django.db.models import (
    CharField,
    Count,
    Exists,
    IntegerField,
    JSONField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Sum,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, TruncDate
from django.utils import timezone

from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.models import AuditEvent, Claim, Episode, Export, Page, PageRevision, RecallTrace
from reviews.actions import PROVENANCE_INCOMPLETE
from reviews.exports.service import stale_export_ids

DAY_CHOICES = (7, 30, 90)
DEFAULT_DAYS = 30

Raw = Any
Series = dict[int, dict[date, Raw]]  # {project_id: {day: raw}}


@dataclass
class Scope:
    """Which projects (None: all) over which days, ending today; caches shared reads."""

    project_ids: list[int] | None
    days: tuple[date, ...]
    now: datetime
    _once: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def last(cls, project_ids: Iterable[int] | None, n: int, now: datetime | None = None):
        now = now or timezone.now()
        today = timezone.localdate(now)
        days = tuple(today - timedelta(days=i) for i in range(n - 1, -1, -1))
        return cls(None if project_ids is None else list(project_ids), days, now)

    @property
    def start(self) -> datetime:
        return self.day_start(self.days[0])

    @property
    def end(self) -> datetime:
        return self.day_start(self.days[-1] + timedelta(days=1))

    @staticmethod
    def day_start(day: date) -> datetime:
        return timezone.make_aware(datetime.combine(day, time.min))

    def as_of(self, day: date) -> datetime:
        """The moment a day's state is read: its end, or now for today."""
        return min(self.day_start(day + timedelta(days=1)), self.now)

    def of(self, field: str = "project_id") -> Q:
        return Q() if self.project_ids is None else Q(**{f"{field}__in": self.project_ids})

    def within(self, field: str) -> Q:
        return Q(**{f"{field}__gte": self.start, f"{field}__lt": self.end})

    def once(self, name: str, read: Callable[[Scope], Any]) -> Any:
        if name not in self._once:
            self._once[name] = read(self)
        return self._once[name]


# --- How raws combine ---------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (no interpolation): the value q% of samples are at or below."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)])


def _ratio(raws: list[tuple[int, int]]) -> tuple[int, int]:
    return (sum(r[0] for r in raws), sum(r[1] for r in raws))


@dataclass(frozen=True)
class Kind:
    combine: Callable[[list[Raw]], Raw]  # raws of several projects (or days) into one
    value: Callable[[Raw], float | None]
    # A state at the end of each day (a backlog, an age): a range is summed up by its
    # last day. Otherwise a flow: by the whole range combined.
    state: bool = False
    empty: Raw = None  # a day with no rows


COUNT = Kind(combine=sum, value=lambda r: r, empty=0)
LEVEL = Kind(combine=sum, value=lambda r: r, state=True, empty=0)
RATIO = Kind(combine=_ratio, value=lambda r: r[0] / r[1] if r[1] else None, empty=(0, 0))
STOCK_RATIO = Kind(
    combine=_ratio, value=lambda r: r[0] / r[1] if r[1] else None, state=True, empty=(0, 0)
)
P95 = Kind(combine=lambda rs: [v for r in rs for v in r], value=lambda r: percentile(r, 95))
MEDIAN = Kind(
    combine=lambda rs: [v for r in rs for v in r], value=lambda r: median(r) if r else None
)
STATE_MEDIAN = Kind(
    combine=lambda rs: [v for r in rs for v in r],
    value=lambda r: median(r) if r else None,
    state=True,
)
OLDEST = Kind(
    combine=lambda rs: max((r for r in rs if r is not None), default=None),
    value=lambda r: r,
    state=True,
)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str  # "count", "percent", "ms", "days", "ratio"
    kind: Kind
    compute: Callable[[Scope], Series]

    @property
    def definition(self) -> str:
        """The docstring's first paragraph: what the figure counts, shown on the page."""
        return " ".join((self.compute.__doc__ or "").strip().split("\n\n")[0].split())

    def raws(self, scope: Scope) -> Series:
        return scope.once(f"metric:{self.key}", self.compute)

    def daily(self, scope: Scope, project_ids: Iterable[int] | None = None) -> list[Raw]:
        """One raw per day of the scope, combined over `project_ids` (default: all read)."""
        by_project = self.raws(scope)
        chosen = (
            by_project.values()
            if project_ids is None
            else (by_project.get(pk, {}) for pk in project_ids)
        )
        chosen = list(chosen)
        out = []
        for day in scope.days:
            present = [d[day] for d in chosen if day in d]
            out.append(self.kind.combine(present) if present else self.kind.empty)
        return out

    def values(self, scope: Scope, project_ids: Iterable[int] | None = None) -> list:
        daily = self.daily(scope, project_ids)
        return [self.kind.value(r) if r is not None else None for r in daily]

    def summary(self, scope: Scope, project_ids: Iterable[int] | None = None):
        """The range in one figure: the last day of a state, the whole range of a flow."""
        daily = self.daily(scope, project_ids)
        if self.kind.state:
            raw = daily[-1]
        else:
            present = [r for r in daily if r is not None]
            raw = self.kind.combine(present) if present else self.kind.empty
        return self.kind.value(raw) if raw is not None else None


METRICS: dict[str, Metric] = {}


def metric(key: str, label: str, unit: str, kind: Kind):
    def register(fn: Callable[[Scope], Series]) -> Callable[[Scope], Series]:
        METRICS[key] = Metric(key, label, unit, kind, fn)
        return fn

    return register


def _grouped(rows: Iterable[dict], value: Callable[[dict], Raw]) -> Series:
    out: Series = defaultdict(dict)
    for row in rows:
        out[row["project_id"]][row["day"]] = value(row)
    return out


def _per_day(queryset, field: str, **aggregates):
    """`aggregates` per (project, local day of `field`), one grouped query."""
    return (
        queryset.annotate(day=TruncDate(field))
        .values("project_id", "day")
        .annotate(**aggregates)
        .order_by()
    )


# --- Ingest and review ------------------------------------------------------------------


@metric("episodes", "Episodes ingested", "count", COUNT)
def episodes_ingested(scope: Scope) -> Series:
    """Episodes recorded that day by any importer, agent or API call, whatever their status
    now (quarantined ones were ingested too). The app's own bookkeeping lines (approvals,
    retrievals, source-ingest notes) are left out: they are not project material.
    """
    rows = _per_day(
        Episode.objects.filter(scope.of(), scope.within("recorded_at")).exclude(
            kind__in=Episode.BOOKKEEPING_KINDS
        ),
        "recorded_at",
        n=Count("id"),
    )
    return _grouped(rows, lambda r: r["n"])


def _candidates(scope: Scope) -> list[dict]:
    return list(
        _per_day(
            Candidate.objects.filter(scope.of(), scope.within("created_at")),
            "created_at",
            n=Count("id"),
            blocked=Count("id", filter=~Q(blocked_reason="")),
        )
    )


@metric("proposed", "Candidates proposed", "count", COUNT)
def candidates_proposed(scope: Scope) -> Series:
    """Candidates created that day, by a sweep or by a conflict resolution that queued a
    text for review, whatever their status now: what reached the review queue's door.
    """
    return _grouped(scope.once("candidates", _candidates), lambda r: r["n"])


@metric("blocked", "Blocked by policy", "count", COUNT)
def candidates_blocked(scope: Scope) -> Series:
    """Candidates a sweep created blocked that day: their evidence carries a flag the
    project policy blocks (they wait for a maintainer). Counted by creation day and the
    blocked reason the sweep wrote, which stays when a maintainer later unblocks one.
    """
    return _grouped(scope.once("candidates", _candidates), lambda r: r["blocked"])


def _decisions(scope: Scope) -> list[dict]:
    """The dated review transitions, from the audit log the review services write."""
    refused = Q(
        action="review.denied", object_type="Candidate", note__contains=PROVENANCE_INCOMPLETE
    )
    return list(
        _per_day(
            AuditEvent.objects.filter(
                scope.of(),
                scope.within("at"),
                action__in=(
                    "candidate.approved",
                    "candidate.rejected",
                    "page.rollback",
                    "review.denied",
                ),
            ),
            "at",
            approved=Count("id", filter=Q(action="candidate.approved")),
            rejected=Count("id", filter=Q(action="candidate.rejected")),
            rollbacks=Count("id", filter=Q(action="page.rollback")),
            provenance=Count("object_id", filter=refused, distinct=True),
        )
    )


@metric("promoted", "Promoted (approved)", "count", COUNT)
def candidates_promoted(scope: Scope) -> Series:
    """Candidates approved that day (the audit log's candidate.approved rows), by any path:
    the review page, the command line, the API, or a conflict resolution that approved the
    accepted side. Merges are not counted: they add evidence to a claim already promoted.
    """
    return _grouped(scope.once("decisions", _decisions), lambda r: r["approved"])


@metric("rejected", "Rejected", "count", COUNT)
def candidates_rejected(scope: Scope) -> Series:
    """Candidates rejected that day (candidate.rejected audit rows)."""
    return _grouped(scope.once("decisions", _decisions), lambda r: r["rejected"])


@metric("provenance", "Refused: provenance incomplete", "count", COUNT)
def provenance_refused(scope: Scope) -> Series:
    """Distinct candidates whose approval or merge was refused that day because an evidence
    episode has no hashed source (the review gate's "provenance incomplete" refusal, from
    its review.denied audit rows). A candidate tried twice in a day counts once.
    """
    return _grouped(scope.once("decisions", _decisions), lambda r: r["provenance"])


@metric("acceptance", "Promotion acceptance rate", "percent", RATIO)
def acceptance_rate(scope: Scope) -> Series:
    """Approved / (approved + rejected) among the decisions made that day. Defers and
    merges are not decisions on whether a fact belongs in memory; a day without decisions
    has no rate (a gap, not 0%).
    """
    rows = scope.once("decisions", _decisions)
    return _grouped(rows, lambda r: (r["approved"], r["approved"] + r["rejected"]))


@metric("rollbacks", "Rollbacks", "count", COUNT)
def rollbacks(scope: Scope) -> Series:
    """Page rollbacks that day (page.rollback audit rows): each republished an older
    revision of one page, taking the claims it did not list off the page.
    """
    return _grouped(scope.once("decisions", _decisions), lambda r: r["rollbacks"])


# --- Dreaming ---------------------------------------------------------------------------


def _count(key: str) -> Sum:
    return Sum(Cast(KT(f"counts__{key}"), IntegerField()))


@metric("compression", "Duplicate compression", "ratio", RATIO)
def duplicate_compression(scope: Scope) -> Series:
    """Statements read per distinct fact, over the sweeps (not previews) that finished that
    day: (usable sentences + duplicate episodes folded) / facts, from each run's counts.
    1.0 means nothing repeated; 3.0 means each fact was said three times on average.
    Facts, not candidates, are the denominator: a fact that stays episodic was deduplicated
    too, and dividing by candidates would mix deduplication with the admission threshold.
    """
    rows = _per_day(
        DreamRun.objects.filter(
            scope.of(), scope.within("finished_at"), status=DreamRun.Status.SUCCEEDED
        ).exclude(trigger=DreamRun.Trigger.PREVIEW),
        "finished_at",
        sentences=_count("engine_sentences"),
        junk=_count("engine_junk_sentences"),
        folded=_count("duplicates"),
        facts=_count("engine_clusters"),
    )
    return _grouped(
        rows,
        lambda r: (
            (r["sentences"] or 0) - (r["junk"] or 0) + (r["folded"] or 0),
            r["facts"] or 0,
        ),
    )


def _samples(rows: Iterable[tuple[int, date, int]]) -> Series:
    out: Series = defaultdict(lambda: defaultdict(list))
    for project_id, day, value in rows:
        out[project_id][day].append(value)
    return out


@metric("dream_p95", "p95 dreaming latency", "ms", P95)
def dreaming_p95(scope: Scope) -> Series:
    """95th percentile of the wall time of the dream runs that finished that day
    (DreamRun.duration_ms: select, Light/REM/Deep, persist, settle), previews and failed
    runs included: a user waits on those too.
    """
    return _durations(scope, DreamRun, "finished_at")


@metric("recall_p95", "p95 retrieval latency", "ms", P95)
def retrieval_p95(scope: Scope) -> Series:
    """95th percentile of the wall time of the retrievals made that day (RecallTrace.
    duration_ms, written by every search through the web, API, MCP and command line).
    """
    return _durations(scope, RecallTrace, "at")


def _durations(scope: Scope, model, at: str) -> Series:
    """The `duration_ms` samples of `model`'s rows, by project and the day of `at`."""
    rows = (
        model.objects.filter(scope.of(), scope.within(at), duration_ms__isnull=False)
        .annotate(day=TruncDate(at))
        .values_list("project_id", "day", "duration_ms")
        .order_by()
    )
    return _samples(rows)


# --- Conflicts and open questions -------------------------------------------------------


@dataclass(frozen=True)
class _ConflictSpan:
    detected: datetime
    escalated: datetime | None
    resolved: datetime | None


def _conflicts(scope: Scope) -> dict[int, list[_ConflictSpan]]:
    """Every conflict open at some point of the window, with when it was escalated.

    Escalation is dated only by its audit row (conflict.escalate), read in the same query.
    """
    escalated = (
        AuditEvent.objects.filter(
            object_type="Conflict",
            object_id=Cast(OuterRef("pk"), CharField()),
            action="conflict.escalate",
        )
        .order_by("at")
        .values("at")[:1]
    )
    rows = (
        Conflict.objects.filter(scope.of(), detected_at__lt=scope.end)
        .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=scope.start))
        .annotate(escalated_at=Subquery(escalated))
        .values_list("project_id", "detected_at", "escalated_at", "resolved_at")
        .order_by()
    )
    out: dict[int, list[_ConflictSpan]] = defaultdict(list)
    for project_id, detected, escalated_at, resolved in rows:
        out[project_id].append(_ConflictSpan(detected, escalated_at, resolved))
    return out


def _before(moment: datetime | None, cutoff: datetime) -> bool:
    return moment is not None and moment < cutoff


def _open_contradictions(scope: Scope) -> dict[int, dict[date, list[float]]]:
    """Per project and day, the ages in days of the conflicts open at the day's end."""
    out: dict[int, dict[date, list[float]]] = {}
    for project_id, spans in scope.once("conflicts", _conflicts).items():
        days = out[project_id] = {}
        for day in scope.days:
            at = scope.as_of(day)
            days[day] = [
                (at - s.detected).total_seconds() / 86400
                for s in spans
                if s.detected < at and not _before(s.escalated, at) and not _before(s.resolved, at)
            ]
    return out


@metric("contradictions", "Open contradictions", "count", LEVEL)
def contradictions_open(scope: Scope) -> Series:
    """Conflicts a sweep detected and nobody has yet resolved or escalated, at the end of
    the day (today: now). Escalated ones move to the open-question backlog.
    """
    ages = scope.once("contradictions", _open_contradictions)
    return {pk: {day: len(v) for day, v in days.items()} for pk, days in ages.items()}


@metric("contradiction_oldest", "Oldest open contradiction", "days", OLDEST)
def contradiction_oldest(scope: Scope) -> Series:
    """Age in days of the oldest open contradiction at the end of the day; none open, no
    value. The oldest, because one neglected conflict is what this figure should surface.
    """
    ages = scope.once("contradictions", _open_contradictions)
    return {
        pk: {day: max(v) if v else None for day, v in days.items()} for pk, days in ages.items()
    }


@metric("contradiction_median", "Median open contradiction age", "days", STATE_MEDIAN)
def contradiction_median(scope: Scope) -> Series:
    """Median age in days of the contradictions open at the end of the day: whether
    conflicts are handled as they come, which the oldest alone does not tell.
    """
    return scope.once("contradictions", _open_contradictions)


@metric("questions", "Open-question backlog", "count", LEVEL)
def open_questions(scope: Scope) -> Series:
    """Conflicts escalated as open questions (OPEN_QUESTIONS) and not yet resolved, at the
    end of the day.
    """
    out: Series = {}
    for project_id, spans in scope.once("conflicts", _conflicts).items():
        out[project_id] = {
            day: sum(
                1
                for s in spans
                if _before(s.escalated, scope.as_of(day))
                and not _before(s.resolved, scope.as_of(day))
            )
            for day in scope.days
        }
    return out


@metric("resolution_days", "Median time to resolution", "days", MEDIAN)
def resolution_time(scope: Scope) -> Series:
    """Median days from detection to resolution of the conflicts resolved that day, open
    questions and plain contradictions alike: how long a contradiction stays in memory.
    """
    out: Series = defaultdict(lambda: defaultdict(list))
    for project_id, spans in scope.once("conflicts", _conflicts).items():
        for s in spans:
            if s.resolved is not None and scope.start <= s.resolved < scope.end:
                day = timezone.localdate(s.resolved)
                out[project_id][day].append((s.resolved - s.detected).total_seconds() / 86400)
    return out


# --- The reviewed wiki ------------------------------------------------------------------


def _has_evidence() -> Exists:
    return Exists(Claim.evidence.through.objects.filter(claim_id=OuterRef("pk")))


@metric("coverage", "Citation coverage", "percent", STOCK_RATIO)
def citation_coverage(scope: Scope) -> Series:
    """Share of the claims on the pages' current revisions (each page's latest revision
    at the end of the day) that cite at least one evidence episode. Evidence is read as
    it is now (merges and sweeps add some, erasure removes some); erased claims are not
    counted. A project without pages has no value.
    """
    pages = Page.objects.filter(scope.of())
    before = (
        PageRevision.objects.filter(page=OuterRef("pk"), created_at__lt=scope.start)
        .order_by("-created_at", "-number")
        .values("claim_ids")[:1]
    )
    start_ids = pages.annotate(ids=Subquery(before, output_field=JSONField())).values_list(
        "pk", "project_id", "ids"
    )
    changes = (
        PageRevision.objects.filter(scope.of("page__project_id"), scope.within("created_at"))
        .values_list("page_id", "page__project_id", "created_at", "claim_ids")
        .order_by("created_at", "number")
    )
    # Claims that do not count as cited (few): without evidence, or erased.
    uncited, erased = set(), set()
    for pk, status in (
        Claim.objects.filter(scope.of())
        .annotate(cited=_has_evidence())
        .filter(Q(cited=False) | Q(status=Claim.Status.ERASED))
        .values_list("pk", "status")
    ):
        (erased if status == Claim.Status.ERASED else uncited).add(pk)

    def tally(ids) -> tuple[int, int]:
        listed = [i for i in ids or () if i not in erased]
        return (sum(1 for i in listed if i not in uncited), len(listed))

    # project -> page -> (cited, listed) of the page's latest revision so far
    current: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
    for page_id, project_id, ids in start_ids:
        if ids is not None:
            current[project_id][page_id] = tally(ids)
    pending = list(changes)
    out: Series = defaultdict(dict)
    i = 0
    for day in scope.days:
        cutoff = scope.day_start(day + timedelta(days=1))
        while i < len(pending) and pending[i][2] < cutoff:
            page_id, project_id, _, ids = pending[i]
            current[project_id][page_id] = tally(ids)
            i += 1
        for project_id, pages in current.items():
            out[project_id][day] = _ratio(list(pages.values()))
    return out


@metric("unsupported", "Unsupported-claim rate", "percent", RATIO)
def unsupported_rate(scope: Scope) -> Series:
    """Claims approved that day that cite no evidence episode / claims approved that day
    (evidence as it is now; erased claims left out). Counted over the day's promotions
    rather than the whole wiki: citation coverage already tells the state of the pages,
    this tells whether the day's decisions let unsupported claims in (a bundle's baseline,
    a merged text).
    """
    rows = _per_day(
        Claim.objects.filter(scope.of(), scope.within("approved_at"))
        .exclude(status=Claim.Status.ERASED)
        .annotate(cited=_has_evidence()),
        "approved_at",
        total=Count("id"),
        unsupported=Count("id", filter=Q(cited=False)),
    )
    return _grouped(rows, lambda r: (r["unsupported"], r["total"]))


# --- Exports ----------------------------------------------------------------------------


@metric("export_age", "Age of the newest export", "days", OLDEST)
def export_age(scope: Scope) -> Series:
    """Days since the project's newest export at the end of the day (today: now); no
    value before its first export. Across projects, the oldest: the project whose agents
    work from the most dated handoff. Whether it is stale now is in `export_status`.
    """
    older = (
        Export.objects.filter(scope.of(), generated_at__lt=scope.start)
        .values("project_id")
        .annotate(at=Max("generated_at"))
        .order_by()
    )
    newest = {r["project_id"]: r["at"] for r in older}
    made: dict[int, list[datetime]] = defaultdict(list)
    for project_id, at in (
        Export.objects.filter(scope.of(), scope.within("generated_at"))
        .values_list("project_id", "generated_at")
        .order_by("generated_at")
    ):
        made[project_id].append(at)
    out: Series = defaultdict(dict)
    for project_id in newest.keys() | made.keys():
        latest = newest.get(project_id)
        todo = made.get(project_id, [])
        for day in scope.days:
            at = scope.as_of(day)
            while todo and todo[0] < at:
                latest = todo.pop(0)
            if latest is not None:
                out[project_id][day] = (at - latest).total_seconds() / 86400
    return out


@dataclass(frozen=True)
class ExportStatus:
    export_id: int
    generated_at: datetime
    stale: bool


def export_status(project_ids: Iterable[int] | None = None) -> dict[int, ExportStatus]:
    """Each project's newest export and whether it is stale now (a claim it used is no
    longer approved, or a page moved on): three queries for any number of projects.
    """
    newest_of_its_project = Subquery(
        Export.objects.filter(project_id=OuterRef("project_id"))
        .order_by("-generated_at", "-id")
        .values("pk")[:1]
    )
    scope = Q() if project_ids is None else Q(project_id__in=list(project_ids))
    rows = list(
        Export.objects.filter(scope, pk=newest_of_its_project)
        .values_list("project_id", "pk", "generated_at")
        .order_by()
    )
    stale = stale_export_ids([pk for _, pk, _ in rows])
    return {project_id: ExportStatus(pk, at, pk in stale) for project_id, pk, at in rows}
