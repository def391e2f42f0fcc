"""Whether the Hugging Face Hub can be reached: a cheap check before anything that would retry."""

from __future__ import annotations

import os


ANSWER_WITHIN = 5.0  # seconds: a Hub that has not answered by then is taken as not answering


def hub_unreachable(answer_within: float | None = None) -> str | None:
    """Why the Hub cannot be reached (HF_HUB_OFFLINE set, or its host does not resolve and no proxy
    is set), or None when it may be: a cheap check before anything that would retry for a minute.
    ``answer_within``: also ask the endpoint once and say so if nothing answers in that many seconds
    (an endpoint that accepts and never answers costs the hub client ~50 s of retries otherwise)."""
    why = _unresolved()
    if why is None and answer_within is not None:
        why = _silent(answer_within)
    return why


def _silent(timeout: float) -> str | None:
    """Why the Hub's endpoint gives no HTTP answer within ``timeout`` seconds (None: it answered,
    whatever the status)."""
    import httpx
    from huggingface_hub import constants

    try:
        httpx.get(constants.ENDPOINT.rstrip("/") + "/api/whoami-v2", timeout=timeout)
    except httpx.TimeoutException:
        return f"{constants.ENDPOINT} did not answer within {timeout:g} s"
    except httpx.HTTPError as err:
        return f"{constants.ENDPOINT} cannot be reached ({type(err).__name__})"
    return None


def _unresolved() -> str | None:
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                                       "all_proxy")):
        return None
    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError as err:
        return f"{host} does not resolve ({getattr(err, 'strerror', None) or err})"
    return None
