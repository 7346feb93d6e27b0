"""Retrieval quality with and without reviewed claims, on each development corpus and the demo.

Each corpus is ingested into a fresh project and dreamed; its questions (each with the
words a right answer holds) are asked through `retrieve` as the operator. Then the
candidates the answer key lists as facts are approved (every proposed candidate holding
all of a fact's keywords; on the demo, which has no key, every proposed candidate, as a
reviewer working through the queue would), and the same questions are asked again. A
question is answered at k when one of the first k hits holds one of its answer words.

The corpora are read where they live, never copied here: Orchard and Kestrel under
``../shared/eval`` (their answer keys hold the retrieval questions and the facts), the
demo in ``llmwiki/demo/corpus`` (its questions are below, written from the material).
Target: with claims ≥ without, at 1 and at 3, on every corpus.

Run: ``python bench/retrieval_quality.py [--no-record]``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import unicodedata
from pathlib import Path

from common import REPO_DIR, db_label, md_table, record, setup_django, text_table

EVAL = REPO_DIR.parent / "shared" / "eval"
DEMO = REPO_DIR / "llmwiki" / "demo" / "corpus"
# Written from the demo corpus (notes, daily logs, transcripts); each with its answer words.
DEMO_QUESTIONS = [
    ("Which host runs the staging database?", ["db-staging-2"]),
    ("How many units does a typical sailing carry?", ["60–110"]),
    ("Which database host runs production PostgreSQL?", ["db-prod-1"]),
    ("How many gunicorn workers does the api run on each host?", ["9 per host", "9 sync"]),
    ("How long does the tracking page cache a consignment?", ["300 s", "300s"]),
    ("How long are scan_events kept before the retention job deletes them?", ["400 days"]),
    ("Which host runs Redis and the scheduled jobs?", ["tw-app-1"]),
    ("When does the nightly dump of the production database run?", ["02:00"]),
    ("What replaced RabbitMQ for the shipment event queue?", ["redis streams"]),
    ("Which test kept failing intermittently?", ["test_berth_allocation"]),
    ("Who owns acceptance of the CSV export of sailing manifests?", ["priya"]),
    ("Which command refreshes the staging data from prod?", ["make staging-refresh"]),
]
K = 3


def norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("`", "").replace("*", "")
    return re.sub(r"\s+", " ", text).strip().lower()


def corpora() -> list[tuple[str, Path, list[tuple[str, list[str]]], list[list[str]] | None]]:
    """(name, corpus root, questions, fact keyword lists or None for every candidate)."""
    out = [("Demo", DEMO, DEMO_QUESTIONS, None)]
    for name in ("orchard", "kestrel"):
        key_path = EVAL / name / "answer_key.json"
        if not key_path.exists():
            print(f"skipped {name}: {key_path} is absent (shared corpora live outside the repo)")
            continue
        key = json.loads(key_path.read_text())
        questions = [(q["query"], q["expect_any"]) for q in key["retrieval_questions"]]
        facts = [f["keywords"] for f in key["facts"]]
        out.append((name.capitalize(), EVAL / name / key["corpus_root"], questions, facts))
    return out


def ask(project, questions) -> tuple[float, float]:
    from llmwiki.search import Caller, retrieve

    at1 = at3 = 0
    for query, answers in questions:
        hits = retrieve(project, query, caller=Caller.operator("bench"), limit=K, record=False)
        found = [any(norm(a) in norm(h.text) for a in answers) for h in hits.hits]
        at1 += bool(found[:1] and found[0])
        at3 += any(found)
    return at1 / len(questions), at3 / len(questions)


def approve_facts(project, facts, reviewer) -> int:
    from dreaming.models import Candidate
    from reviews import actions

    approved = 0
    for candidate in Candidate.objects.filter(project=project, status=Candidate.Status.PROPOSED):
        text = norm(candidate.text)
        if facts is not None and not any(all(norm(k) in text for k in f) for f in facts):
            continue
        candidate.refresh_from_db()
        if candidate.status != Candidate.Status.PROPOSED:
            continue  # an earlier approval settled it (a conflict, a merge)
        try:
            actions.candidate_approve(
                candidate=candidate,
                reviewer=reviewer,
                seen=actions.form_state(candidate),
                note="bench: listed as a fact",
                sensitive_confirmed=True,
            )
        except Exception as exc:  # a refusal is reported; the run goes on
            print(f"  not approved #{candidate.pk}: {exc}")
            continue
        approved += 1
    return approved


def run(name, root, questions, facts) -> list[object]:
    from django.contrib.auth import get_user_model

    from dreaming import services as dreaming
    from llmwiki.ingest import collect_paths, ingest_files
    from llmwiki.services import project_create

    slug = f"{name.lower()}-{time.time_ns():x}"
    reviewer = get_user_model().objects.create_superuser(slug, password=None)
    project = project_create(slug=slug, name=name, actor="bench", owner=reviewer)
    files = [f for f in collect_paths([root]) if f.path != "SEEDED.md"]
    ingest_files(project=project, files=files, actor="bench")
    run = dreaming.dream_request(project=project, trigger="manual", actor="bench", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    before = ask(project, questions)
    approved = approve_facts(project, facts, reviewer)
    after = ask(project, questions)
    return [name, len(questions), approved, *(f"{v:.3f}" for v in (*before, *after))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    setup_django()
    rows = [run(*corpus) for corpus in corpora()]
    header = ["corpus", "questions", "approved", "hit@1 no claims", "hit@3 no claims"]
    header += ["hit@1 with claims", "hit@3 with claims"]
    print(text_table(header, rows))
    met = all(r[5] >= r[3] and r[6] >= r[4] for r in rows)
    notes = [
        f"- On {db_label()}: each corpus ingested and dreamed in a fresh project, its questions "
        f"asked through `retrieve` (k={K}), then the candidates the answer key lists as facts "
        "approved (the demo: every proposed candidate) and the questions asked again.",
        f"- Target: with claims ≥ without on every corpus: {'met' if met else 'NOT met'}.",
    ]
    print("\n".join(notes))
    if not args.no_record:
        record(
            "Retrieval quality with and without claims (bench/retrieval_quality.py)",
            [*md_table(header, rows), "", *notes],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
