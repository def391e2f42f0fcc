"""Every assumption the seam makes about lmms-eval, checked against the installed lmms-eval:
``contract_problems`` names each one that no longer holds, by the lmms-eval code it relies on
(tests/test_harness.py runs it, so an lmms-eval upgrade fails there first)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from spatial_tasks.harness import upstream
from spatial_tasks.harness.pooling import RecordRef, register_aggregations


def contract_problems() -> list[str]:
    """One line per assumption about lmms-eval that does not hold (empty when all hold)."""
    problems: list[str] = []

    def check(what: str, test: Callable[[], bool]) -> None:
        try:
            ok = test()
        except Exception as err:  # noqa: BLE001 - any failure means the assumption broke
            problems.append(f"{what}: {type(err).__name__}: {err}")
            return
        if not ok:
            problems.append(what)

    def task_manager():
        from lmms_eval.tasks import TaskManager

        return TaskManager

    def configurable_task():
        from lmms_eval.api.task import ConfigurableTask

        return ConfigurableTask

    check("(1) TaskManager.initialize_tasks(include_path, ...) builds the task index (task discovery)",
          lambda: "include_path" in inspect.signature(task_manager().initialize_tasks).parameters)
    check("(1) the lmms_eval.models entry-point group is loaded with ModelManifest(model_id, simple_class_path)",
          lambda: {"model_id", "simple_class_path"} <= set(inspect.signature(
              __import__("lmms_eval.models.registry_v2", fromlist=["ModelManifest"]).ModelManifest).parameters))
    check("(2) ConfigurableTask.__init__ sets DATASET_PATH/NAME, then calls self.download(self.config.dataset_kwargs)",
          lambda: "self.download(self.config.dataset_kwargs)" in inspect.getsource(configurable_task().__init__))
    check("(2) ConfigurableTask.download calls config.process_docs(split) on the loaded splits",
          lambda: "self.config.process_docs(self.dataset[split])" in inspect.getsource(unpatched_download()))
    check("(3) ConfigurableTask.download is a tenacity retry wrapper (retry_with exists)",
          lambda: hasattr(unpatched_download(), "retry_with"))
    check("(2) TaskConfig has the dataset / prompt / metadata / metric_list fields TaskData reads",
          lambda: {"dataset_path", "dataset_name", "dataset_kwargs", "test_split", "process_docs",
                   "lmms_eval_specific_kwargs", "metadata", "metric_list"} <= set(
              __import__("lmms_eval.api.task", fromlist=["TaskConfig"]).TaskConfig.__dataclass_fields__))
    check("(2) lmms-eval resolves a task's lmms_eval_specific_kwargs before download (task.lmms_eval_specific_kwargs)",
          lambda: "self.lmms_eval_specific_kwargs" in inspect.getsource(configurable_task()._prepare_model_specific_config))
    check("(12) lmms-eval reads task YAMLs with yaml.full_load, registering !function on the default loaders",
          lambda: all(t in inspect.getsource(__import__("lmms_eval.utils", fromlist=["x"]).load_yaml_config)
                      for t in ("yaml.full_load(file)", 'yaml.add_constructor("!function", constructor_fn)')))
    check("(14) TaskManager.initialize_tasks indexes lmms-eval's own folder (its path + '/') and each include path with "
          "_get_task_and_group(task_dir), reading each YAML with utils.load_yaml_config(path, mode='simple') "
          "(includes through the module's load_yaml_config) and logging on self.logger",
          lambda: all(t in inspect.getsource(task_manager().initialize_tasks) for t in (
              'os.path.dirname(os.path.abspath(__file__)) + "/"', "self._get_task_and_group(task_dir)"))
          and all(t in inspect.getsource(unpatched_task_and_group()) for t in (
              'utils.load_yaml_config(yaml_path, mode="simple")', "self.logger."))
          and "load_yaml_config(yaml_path=path, mode=mode)" in inspect.getsource(
              __import__("lmms_eval.utils", fromlist=["x"]).load_yaml_config))
    check("(3) the CLI catches Exception (not SystemExit) around an evaluation",
          lambda: "except Exception as e:" in inspect.getsource(__import__("lmms_eval.__main__", fromlist=["x"]).cli_evaluate))
    check("(4) a group's aggregate_metric_list aggregation is called as fn(subtask values, sizes, weight_by_size) "
          "and matches metric names as substrings",
          lambda: all(s in inspect.getsource(__import__("lmms_eval.evaluator_utils", fromlist=["x"]).consolidate_group_results)
                      for s in ("aggregate_fn(", 'metric_config["metric"] not in metric')))
    check("(4) a task's string aggregation is looked up in lmms-eval's registry (get_aggregation) when the task is "
          "built, and the models' entry points load when lmms_eval.models is imported (registration precedes tasks)",
          lambda: "get_aggregation(agg_name)" in inspect.getsource(configurable_task()._prepare_metric_and_aggregation)
          and "load_entrypoint_manifests" in inspect.getsource(__import__("lmms_eval.models", fromlist=["x"]))
          and all(__import__("lmms_eval.api.registry", fromlist=["x"]).get_aggregation(name) is not None
                  for name in register_aggregations()))
    check("(5) logged samples write unknown objects with str()",
          lambda: __import__("lmms_eval.utils", fromlist=["x"]).handle_non_serializable(RecordRef({}, "k"))
          == "<spatial-tasks record: see 'k'>")
    check("(7) lmms-eval's embspatial and cv_bench letter readers take the answer's first letter: '(B)' -> B, "
          "'C. the lamp' -> C, 'The lamp' -> T (resplit/tasks.py documents this)",
          lambda: [f(t) for f in (upstream.embspatial_answer_letter, upstream.cv_bench_answer_letter)
                   for t in ("(B)", "C. the lamp", "The lamp")] == ["B", "C", "T"] * 2)
    check("(13) lmms-eval's CLI calls evaluator.simple_evaluate(model=, model_args=, tasks=) (the preflight wraps it)",
          lambda: "evaluator.simple_evaluate(" in inspect.getsource(
              __import__("lmms_eval.__main__", fromlist=["x"]).cli_evaluate_single)
          and {"model", "model_args", "tasks"} <= set(inspect.signature(
              __import__("lmms_eval.evaluator", fromlist=["x"]).simple_evaluate).parameters))
    model_contract(check)
    check("(10) lmms-eval parses --model_args with _smart_comma_split, then name=value", _splits_model_args_alike)
    return problems


def _splits_model_args_alike() -> bool:
    """(10) ``models.arguments`` splits --model_args as lmms-eval's simple_parse_args_string does."""
    from lmms_eval.utils import simple_parse_args_string

    return ("_smart_comma_split(args_string)" in inspect.getsource(simple_parse_args_string)
            and upstream.split_model_args('a=1,b="x,y"') == ["a=1", 'b="x,y"'])


def model_contract(check: Callable[[str, Callable[[], bool]], None]) -> None:
    """The assumptions about lmms-eval's model classes that our scorers reuse (contract_problems)."""
    check("(8) lmms-eval's Qwen2_5_VL has " + ", ".join(upstream.QWEN2_5_VL_MEMBERS) + ", sets self._model and self.processor "
          "in __init__, and builds its prompt with processor.apply_chat_template",
          lambda: all(hasattr(upstream.lmms_eval_qwen2_5_vl()[0], m) for m in upstream.QWEN2_5_VL_MEMBERS)
          and all(t in inspect.getsource(upstream.lmms_eval_qwen2_5_vl()[0].__init__) for t in ("self._model =", "self.processor ="))
          and "self.processor.apply_chat_template" in inspect.getsource(upstream.lmms_eval_qwen2_5_vl()[0].generate_until))
    check("(9) lmms-eval's Qwen3_VL builds a batch's inputs in _preprocess_chunk(chunk of request args), reading "
          "visuals as doc_to_visual[0](self.task_dict[task][split][doc_id])",
          lambda: "self._preprocess_chunk" in inspect.getsource(upstream.lmms_eval_model_module("qwen3_vl").Qwen3_VL.generate_until)
          and "doc_to_visual[0](self.task_dict[t][s][i])" in inspect.getsource(
              upstream.lmms_eval_model_module("qwen3_vl").Qwen3_VL._preprocess_chunk))
    check("(9) lmms-eval's Gemma3 prompts with a system turn, JPEG data URLs and processor.apply_chat_template "
          "(padding to a multiple of 8)",
          lambda: all(t in inspect.getsource(upstream.lmms_eval_model_module("gemma3").Gemma3.generate_until) for t in (
              '{"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}',
              "self._encode_image_data_url(visual)", "self.processor.apply_chat_template(batched_messages",
              '"pad_to_multiple_of": 8')))
    check("(9) lmms-eval's LlavaHf prompts with '<image>' markers before the context as one user message "
          "through tokenizer.apply_chat_template (VICUNA_CHAT_TEMPLATE when the tokenizer has none)",
          lambda: hasattr(upstream.lmms_eval_model_module("llava_hf"), "VICUNA_CHAT_TEMPLATE") and all(
              t in inspect.getsource(upstream.lmms_eval_model_module("llava_hf").LlavaHf.generate_until) for t in (
                  'context = f"{image_tokens}\\n{context}"', 'messages = [{"role": "user", "content": context}]',
                  "self._image_processor(images=visuals, text=text")))


def unpatched_task_and_group():
    from lmms_eval.tasks import TaskManager

    method = TaskManager._get_task_and_group
    return method.__wrapped__ if getattr(method, "_spatial_tasks", False) else method


def unpatched_download():
    from lmms_eval.api.task import ConfigurableTask

    download = ConfigurableTask.download
    return download.__wrapped__ if getattr(download, "_spatial_tasks", False) else download
