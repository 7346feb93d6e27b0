from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        # Each registers with the app below: what OPEN_QUESTIONS lists, the erasure step,
        # the review actions.
        from reviews import conflicts, erasure, registry  # noqa: F401
