"""One way to paginate a list page: the page, and the query string to carry to its links."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest


def paginate(request: HttpRequest, queryset: QuerySet, per_page: int) -> tuple[Page, str]:
    """Return the requested page and the other GET parameters, urlencoded, for its links."""
    page = Paginator(queryset, per_page).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return page, query.urlencode()
