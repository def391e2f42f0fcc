"""The local OpenAI-compatible test server, through the openai client and through lmms-eval's
own ``openai`` model class (images must arrive as base64 data URLs)."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request

import openai
import pytest
from lmms_eval.api.instance import Instance
from lmms_eval.models.chat.openai import OpenAICompatible
from openai_server import answer_for, decode_data_url, image_urls, prompt_text
from PIL import Image


def _png_data_url(image: Image.Image) -> str:
    import base64

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_openai_client_round_trip(openai_server):
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="test-key", max_retries=0)
    image = Image.new("RGB", (8, 6), (255, 0, 0))
    reply = client.chat.completions.create(
        model="stub",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": _png_data_url(image)}},
                    {"type": "text", "text": "Is the red cube closer than the blue sphere?"},
                ],
            }
        ],
        max_tokens=4,
        temperature=0,
    )
    assert reply.choices[0].message.content == "Yes"
    assert reply.usage.completion_tokens == 1
    (body,) = openai_server.requests
    assert body["model"] == "stub" and body["max_tokens"] == 4
    assert prompt_text(body) == "Is the red cube closer than the blue sphere?"
    mime, data = decode_data_url(image_urls(body)[0])
    assert mime == "image/png" and Image.open(io.BytesIO(data)).size == (8, 6)
    assert openai_server.headers[0]["authorization"] == "Bearer test-key"

    reply = client.chat.completions.create(
        model="stub", messages=[{"role": "user", "content": "Is the blue cube closer?"}]
    )
    assert reply.choices[0].message.content == "No"
    assert [m.id for m in client.models.list()] == ["stub"]


def test_answer_rule_and_custom_responder(openai_server):
    assert (
        answer_for({"messages": [{"role": "user", "content": "Is the yellow ball left of the green one?"}]})
        == "Yes"
    )
    assert answer_for({"messages": [{"role": "user", "content": "Is it closer?"}]}) == "No"
    openai_server.responder = lambda body: "Maybe"
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="x", max_retries=0)
    reply = client.chat.completions.create(model="stub", messages=[{"role": "user", "content": "red?"}])
    assert reply.choices[0].message.content == "Maybe"


def test_bad_requests_get_openai_style_errors(openai_server):
    def post(path: str, payload: bytes) -> tuple[int, dict]:
        request = urllib.request.Request(
            openai_server.base_url.removesuffix("/v1") + path,
            data=payload,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    status, body = post("/v1/chat/completions", b"not json")
    assert status == 400 and "invalid JSON" in body["error"]["message"]
    status, body = post("/v1/completions", b"{}")
    assert status == 404
    assert openai_server.requests == []
    with pytest.raises(ValueError, match="not a base64 image data URL"):
        decode_data_url("https://example.com/a.png")


def test_lmms_eval_openai_model_sends_images_as_data_urls(openai_server):
    """lmms-eval's chat ``openai`` model, built from the documented model_args, talks to the server."""
    model_args = (
        f"model_version=stub,base_url={openai_server.base_url},api_key=test,num_concurrent=1,"
        "max_retries=1,retry_backoff_s=0,httpx_trust_env=False"
    )
    model = OpenAICompatible.create_from_arg_string(model_args)
    docs = [
        {
            "image": Image.new("RGB", (32, 24), (0, 0, 255)),
            "question": "Is the red cube closer? Answer with yes or no.",
        },
        {
            "image": Image.new("RGB", (32, 24), (0, 255, 0)),
            "question": "Is the blue cube closer? Answer with yes or no.",
        },
    ]
    model.task_dict = {"toy": {"test": docs}}

    def doc_to_messages(doc):
        return [
            {
                "role": "user",
                "content": [
                    {"type": "image", "url": doc["image"]},
                    {"type": "text", "text": doc["question"]},
                ],
            }
        ]

    requests = [
        Instance(
            request_type="generate_until",
            arguments=(
                doc["question"],
                doc_to_messages,
                {"max_new_tokens": 4, "temperature": 0},
                i,
                "toy",
                "test",
            ),
            idx=0,
            metadata={"task": "toy", "doc_id": i, "repeats": 1},
        )
        for i, doc in enumerate(docs)
    ]
    results = model.generate_until(requests)
    assert [r.text for r in results] == ["Yes", "No"]
    bodies = sorted(openai_server.requests, key=prompt_text)
    assert [prompt_text(b) for b in bodies] == [docs[1]["question"], docs[0]["question"]]
    for body, doc in zip(bodies, [docs[1], docs[0]], strict=True):
        (url,) = image_urls(body)
        mime, data = decode_data_url(url)
        assert mime == "image/png"
        assert Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0)) == doc["image"].getpixel((0, 0))
        assert body["max_tokens"] == 4 and body["model"] == "stub"
