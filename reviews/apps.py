from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        # Each registers with llmwiki: what OPEN_QUESTIONS lists, the erasure step.
        from reviews import conflicts, erasure  # noqa: F401
