"""The legend (``/legend``): what each finding category, the sign of a difference, and each review and
queue state mean, in the words of ``recon_pipeline/words.py``; every category cell of the lists links its
row (``/legend#<code>``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recon_pipeline.review_desk.users import ReviewUser
from recon_pipeline.review_desk.web import Desk
from recon_pipeline.words import (
    CATEGORY_WORDS,
    QUEUE_STATE_MEANINGS,
    QUEUE_STATE_WORDS,
    REVIEW_STATE_MEANINGS,
    REVIEW_STATE_WORDS,
    SIGN_CONVENTION,
)


def routes(desk: Desk) -> list[Route]:
    def legend(request: Request, user: ReviewUser) -> Response:
        return desk.page(
            request,
            "legend.html",
            user,
            categories=list(CATEGORY_WORDS.values()),
            sign_convention=SIGN_CONVENTION,
            review_states=[
                (code, label, REVIEW_STATE_MEANINGS[code]) for code, label in REVIEW_STATE_WORDS.items()
            ],
            queue_states=[
                (code, label, QUEUE_STATE_MEANINGS[code]) for code, label in QUEUE_STATE_WORDS.items()
            ],
        )

    return [Route("/legend", desk.signed_in(legend), methods=["GET"])]
