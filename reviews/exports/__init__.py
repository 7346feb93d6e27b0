"""Exports: the reviewed layer packaged for a receiver (docs/ARCHITECTURE.md §7).

The public API, used by `manage.py export`, the wizard's step 8 and the API:

- `ExportOptions(kind, audience="internal", budget=12000, episode_ids=())` — what to build;
  `kind` is system-profile, receiver-brief, startup-packet or handoff (`bundle` is an alias);
  bad values raise `InputError`.
- `export_render(project=, options=) -> Rendered` — the files (bytes by name, MANIFEST.json
  included; `.zip` for a handoff bundle) on the current state; writes nothing.
- `export_create(project=, options=, actor=, out=None) -> Export` — render, store under
  EXPORT_DIR, record the `Export` row (claims and revisions used) and an audit row; also
  writes the files to `out`. A user actor needs the reviewer role (restricted: the
  project's restricted clearance), else `Refused`.
- `export_verify(folder) -> Verification` — recompute every file's sha256 and size against
  the folder's MANIFEST.json; `.ok`, `.differs`, `.missing`, `.unlisted`, `.summary()`.
- `exports_for_list(project) -> list[Export]` — each with `.stale` and `.status` (verify).
- `export_document(export) -> dict` — an export as JSON: files, claims, revisions,
  withheld counts, `generated_at`, `verify` ("ok", "erased" or what differs), `stale`.
  Files download at `reviews:export_download` (slug, export id, file name).
- `bundle_accept(project=, actor=, source_ids=None) -> BaselineResult` — a maintainer
  accepts an imported handoff bundle as the project's reviewed baseline.

Built only from approved claims on the pages' current revisions, the open questions of
unresolved conflicts, and episodes a caller scoped in explicitly; never from raw sources or
chat turns. It lives in `reviews` because open questions come from `dreaming`'s conflicts,
and `llmwiki` imports neither app.
"""

from reviews.exports.baseline import BaselineResult, bundle_accept
from reviews.exports.pack import Verification
from reviews.exports.service import (
    ExportOptions,
    Rendered,
    export_create,
    export_document,
    export_folder,
    export_render,
    export_verify,
    exports_for_list,
)

__all__ = [
    "BaselineResult",
    "ExportOptions",
    "Rendered",
    "Verification",
    "bundle_accept",
    "export_create",
    "export_document",
    "export_folder",
    "export_render",
    "export_verify",
    "exports_for_list",
]
