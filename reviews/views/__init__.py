"""The reviewer's pages, one module per kind: the queue and candidate panel (`queue`),
conflicts, wiki pages, claims and exports. URL names are in `reviews/urls.py`."""
