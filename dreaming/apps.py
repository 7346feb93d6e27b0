from django.apps import AppConfig


class DreamingConfig(AppConfig):
    name = "dreaming"

    def ready(self) -> None:
        # Each registers what dreaming contributes: project-page counts, an erasure step,
        # open conflicts as retrieval hits.
        from dreaming import erasure, project_counts, retrieval  # noqa: F401
