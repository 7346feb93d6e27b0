"""Redact the blobs of sources with secret findings that were stored as received.

Before this, the raw layer kept the original file, credential included. Each such blob is
rewritten redacted under the same key (the original's sha256); the source row says so.
"""

from django.db import migrations


def redact_stored(apps, schema_editor):
    from llmwiki.blobs import blob_path, blob_write
    from llmwiki.security.raw import redacted_stored

    Source = apps.get_model("llmwiki", "Source")
    for source in Source.objects.only("id", "sha256", "path", "importer", "security_summary"):
        summary = source.security_summary or {}
        expected = {s["fingerprint"] for s in summary.get("secrets", [])}
        if not expected or summary.get("raw") == "redacted":
            continue
        path = blob_path(source.sha256)
        if not path.exists():  # erased, or the data directory was moved
            continue
        data = redacted_stored(
            source.path, path.read_bytes(), expected, is_event=source.importer == "api"
        )
        blob_write(data, source.sha256, replace=True)
        source.security_summary = {**summary, "raw": "redacted"}
        source.save(update_fields=["security_summary"])


class Migration(migrations.Migration):
    dependencies = [("llmwiki", "0004_claim_states")]

    operations = [migrations.RunPython(redact_stored, migrations.RunPython.noop)]
