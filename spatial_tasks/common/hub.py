"""Whether the Hugging Face Hub can be reached: a cheap check before anything that would retry."""

from __future__ import annotations

import os


def hub_unreachable() -> str | None:
    """Why the Hub cannot be reached (HF_HUB_OFFLINE set, or its host does not resolve and no proxy
    is set), or None when it may be: a cheap check before anything that would retry for a minute."""
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
