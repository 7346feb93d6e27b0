"""What the generated development corpora share: writing the corpus and its answer key.

Each corpus's make_corpus.py holds only its texts and calls `write_corpus`; its
build_key.py holds only its tables (facts, conflicts, secrets …, each
occurrence an (file, anchor) pair); this module hashes every file of OUT/corpus, finds
each anchor's one line, and writes OUT/answer_key.json in the harness's schema
(../shared/eval/README.md). Standard library only.
"""

import hashlib
import json
import shutil
from pathlib import Path

MATCHING = (
    "Keywords, probes and candidate texts are compared after NFKC normalisation, removal of "
    "zero-width/bidi characters, backticks and asterisks, curly-quote folding, whitespace "
    "collapsing and lower-casing. Secrets are matched case-insensitively without normalisation."
)


# The generator writes this at the end of every line (or transcript turn) it means as a
# claim line: a durable, standalone fact, decision, rule, procedure step or definition.
# Chatter, headings, questions, plans, news of the day, noise, secrets, PII and injections
# carry none. The marker never reaches the corpus; the key's `claim_lines` lists the lines.
CLAIM = " {claim}"


def _unmark(text):
    """The text without its claim markers, and the 1-based numbers of the marked lines."""
    lines = text.split("\n")
    marked = []
    for i, line in enumerate(lines):
        if line.endswith(CLAIM):
            lines[i] = line[: -len(CLAIM)]
            marked.append(i + 1)
    return "\n".join(lines), marked


def _unmark_turn(turn):
    text, marked = _unmark(turn["content"])
    if "\n" in turn["content"]:
        raise SystemExit(f"turn {turn!r}: a claim marker needs a one-line turn")
    return {**turn, "content": text}, bool(marked)


def write_corpus(out, markdown, transcripts):
    """Write OUT/corpus afresh: `markdown` maps paths to texts, `transcripts` maps paths
    to their turns (dicts, one JSON line each); claim markers are left out."""
    root = Path(out) / "corpus"
    if root.exists():
        shutil.rmtree(root)
    for rel, text in markdown.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_unmark(text)[0], encoding="utf-8")
    for rel, turns in transcripts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(_unmark_turn(t)[0], ensure_ascii=False) + "\n" for t in turns]
        path.write_text("".join(lines), encoding="utf-8")
    print(f"wrote {root}")


def claim_lines(markdown, transcripts):
    """The key's `claim_lines` ({path: [[first, last], ...]}) from the claim markers: the
    lines of a note and the JSONL lines of the turns the generator wrote as claims."""
    out = {}
    marked = {rel: _unmark(text)[1] for rel, text in markdown.items()}
    for rel, turns in transcripts.items():
        marked[rel] = [n for n, t in enumerate(turns, 1) if _unmark_turn(t)[1]]
    for rel in sorted(marked):
        ranges = []
        for n in marked[rel]:
            if ranges and ranges[-1][1] == n - 1:
                ranges[-1][1] = n
            else:
                ranges.append([n, n])
        if ranges:
            out[rel] = ranges
    return out


# The importer shapes the generated transcripts use (three of Orchard's four; the fourth,
# {turn_id, sender, text, time}, holds no `content` the harness could locate).
def role_turns(rows, fill):
    """{id, role, content, timestamp} turns from (id, role, content, ISO time) rows."""
    return [{"id": i, "role": r, "content": fill(c), "timestamp": t} for i, r, c, t in rows]


def speaker_turns(rows, start, fill):
    """{id, speaker, content, ts} turns from (id, speaker, content, seconds after start)."""
    return [{"id": i, "speaker": s, "content": fill(c), "ts": start + dt} for i, s, c, dt in rows]


def author_turns(rows, fill):
    """{message_id, author: {role, name}, content, created_at} turns."""
    return [
        {"message_id": i, "author": {"role": r, "name": n}, "content": fill(c), "created_at": t}
        for i, r, n, c, t in rows
    ]


def kind_of(rel):
    if rel.startswith("memory/dreaming/"):
        return "dreaming_artifact"
    if rel.startswith("memory/"):
        return "daily_log"
    if rel.startswith("transcripts/"):
        return "transcript"
    return "note"


class Corpus:
    """The generated files under OUT/corpus, read as the harness reads them."""

    def __init__(self, root):
        self.root = Path(root)
        self._rows = {}

    def rows(self, rel):
        """[(line_no, text, turn_id)]: a transcript line's text is its turn's content."""
        if rel not in self._rows:
            out = []
            for i, line in enumerate((self.root / rel).read_text(encoding="utf-8").split("\n"), 1):
                if rel.endswith(".jsonl"):
                    if line.strip():
                        obj = json.loads(line)
                        out.append((i, obj.get("content", ""), obj.get("id")))
                else:
                    out.append((i, line, None))
            self._rows[rel] = out
        return self._rows[rel]

    def occ(self, rel, anchor, with_text=True):
        """The one line of `rel` holding `anchor` (two or none stop the build)."""
        hits = [(n, t, tid) for n, t, tid in self.rows(rel) if anchor in t]
        if len(hits) != 1:
            raise SystemExit(f"anchor {anchor!r} in {rel}: {len(hits)} hits")
        n, t, tid = hits[0]
        o = {"file": rel, "line": n}
        if tid:
            o["turn_id"] = tid
        if with_text:
            o["text"] = t.strip()
        return o

    def block(self, rel, start_anchor, end_anchor):
        """First and last line of the block opening at `start_anchor`."""
        start = self.occ(rel, start_anchor, False)["line"]
        end = next(n for n, t, _ in self.rows(rel) if end_anchor in t and n >= start)
        return start, end

    def files(self):
        out = []
        for p in sorted(self.root.rglob("*")):
            if p.is_file():
                rel = p.relative_to(self.root).as_posix()
                data = p.read_bytes()
                out.append(
                    {
                        "path": rel,
                        "kind": kind_of(rel),
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "bytes": len(data),
                        "lines": len(data.decode("utf-8").splitlines()),
                    }
                )
        return out


def write_key(out, *, description, project, tables, secret_values, probes, key_block, claims):
    """Write OUT/answer_key.json from a corpus's tables.

    `claims` is the corpus's `claim_lines` (see `claim_lines`). `tables` maps FACTS,
    CONFLICTS, SECRETS_KEY, PII, INJECTIONS, LIFECYCLE, NOISE, IGNORED and RETRIEVAL to the
    corpus's rows. A secret whose occurrences are not a list is the multi-line `key_block`
    = (name, file, text): it is located by its first and last lines.
    """
    c = Corpus(Path(out) / "corpus")
    files = c.files()
    facts, conflicts, lifecycle, noise = _statements(c, tables)
    secrets, pii, injections = _planted(c, tables, secret_values, probes, key_block)
    ignored = _ignored(c, tables["IGNORED"])
    key = {
        "version": 1,
        "description": description,
        "project": project,
        "corpus_root": "corpus",
        "matching": MATCHING,
        "files": files,
        "facts": facts,
        "conflicts": conflicts,
        "secrets": secrets,
        "pii": pii,
        "injections": injections,
        "lifecycle": lifecycle,
        "noise": noise,
        "ignored_content": ignored,
        "retrieval_questions": [
            {"id": i, "query": q, "expect_any": e} for i, q, e in tables["RETRIEVAL"]
        ],
        "claim_lines": claims,
    }
    (Path(out) / "answer_key.json").write_text(
        json.dumps(key, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(
        f"{len(files)} files, {len(facts)} facts "
        f"({sum(len(f['occurrences']) for f in facts)} statements), {len(conflicts)} conflicts, "
        f"{len(secrets)} secrets, {len(pii)} pii, {len(injections)} injections, "
        f"{len(lifecycle)} lifecycle, {len(noise)} noise, {len(ignored)} ignored, "
        f"{sum(b - a + 1 for r in claims.values() for a, b in r)} claim lines"
    )


def _statements(c, tables):
    """What a sweep should find: facts, conflicts, workstreams' lifecycles, and noise."""
    facts = [
        {
            "id": i,
            "page_target": page,
            "keywords": kw,
            "statement": st,
            "occurrences": [c.occ(f, a) for f, a in occs],
        }
        for i, page, kw, st, occs in tables["FACTS"]
    ]
    conflicts = [
        {
            "id": i,
            "kind": k,
            "subject": subj,
            "old": {"keywords": okw, "occurrences": [c.occ(f, a) for f, a in oo]},
            "new": {"keywords": nkw, "occurrences": [c.occ(f, a) for f, a in no]},
        }
        for i, k, subj, okw, oo, nkw, no in tables["CONFLICTS"]
    ]
    lifecycle = [
        {
            "id": i,
            "workstream": ws,
            "keywords": kw,
            "final_state": fs,
            "mentions_before": [c.occ(f, a) for f, a in before],
            "closed_at": c.occ(*closed),
            "mentions_after": [c.occ(f, a) for f, a in after],
        }
        for i, ws, kw, fs, before, closed, after in tables["LIFECYCLE"]
    ]
    noise = [
        {"id": i, "probe": probe, "occurrences": [c.occ(f, a) for f, a in occs]}
        for i, probe, occs in tables["NOISE"]
    ]
    return facts, conflicts, lifecycle, noise


def _planted(c, tables, secret_values, probes, key_block):
    """What the ingest gate should catch: secrets, personal data and prompt injections."""
    secrets = []
    for i, k, name, occs in tables["SECRETS_KEY"]:
        value = secret_values[name]
        if isinstance(occs, list):
            o = [c.occ(f, a, with_text=False) for f, a in occs]
        else:
            _, rel, text = key_block
            start, end = c.block(rel, text.split("\n")[0], text.split("\n")[-1])
            value = "\n".join(t for n, t, _ in c.rows(rel) if start <= n <= end)
            o = [{"file": rel, "line": start, "end_line": end}]
        secrets.append(
            {"id": i, "kind": k, "value": value, "probes": probes.get(name, []), "occurrences": o}
        )
    pii = []
    for i, k, value, variants, occs in tables["PII"]:
        item = {
            "id": i,
            "kind": k,
            "value": value,
            "expected_flags": ["pii", k],
            "occurrences": [c.occ(f, a) for f, a in occs],
        }
        if variants:
            item["digit_variants"] = variants
        pii.append(item)
    injections = []
    for i, tech, inj_probes, occs, extra in tables["INJECTIONS"]:
        item = {
            "id": i,
            "technique": tech,
            "probes": inj_probes,
            "occurrences": [c.occ(f, a) for f, a in occs],
        }
        item.update(extra)
        injections.append(item)
    return secrets, pii, injections


def _ignored(c, rows):
    """Content the product should leave out, as line ranges (a whole file without anchors)."""
    ignored = []
    for i, reason, rel, start_anchor, end_anchor, ign_probes in rows:
        if start_anchor:
            s, e = c.block(rel, start_anchor, end_anchor)
        else:
            s, e = 1, len(c.rows(rel)) - 1
        ignored.append(
            {"id": i, "reason": reason, "probes": ign_probes, "file": rel, "line": s, "end_line": e}
        )
    return ignored
