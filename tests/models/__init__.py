"""Tests of spatial_tasks.models (tiny offline Qwen2.5-VL, *_yesno scorers) and the OpenAI test server."""
