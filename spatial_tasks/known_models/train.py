"""Teach a tiny Qwen2.5-VL a known behaviour, in two stages, through the model's own forward.

Trained on the answers alone a tiny VLM stays at chance on SpatialTunnel: it never finds which image
tokens a name in the question refers to, and the answer is an XOR (which object wins, and whether the
question says "closer" or "farther", or which option is which) whose parts carry no signal on their own. Auxiliary heads and
attention targets, dropped after training, give each step of the computation its own signal:

1. **vision stage** (``vision_steps``) -- the vision tower and merger alone: a linear head on each merged
   image token predicts which object classes (colour x shape) have their centre in that token's cell and
   each one's cue (``examples._cells``);
2. **question stage** (``question_steps``) -- the whole model on the prompts lmms-eval sends:
   cross-entropy on the answer token and ``<|im_end|>`` (so that generation stops after the answer; off
   for the first ``binding_steps``), plus the vision head, plus
   - binding: head 0 of layer ``BIND_LAYER`` at each reference's last token (the subject, the thing it is
     compared with) attends to that thing's image token, and a head on the last layer reads its cue there;
   - comparing: heads 0, 1 and 2 of layer ``COMPARE_LAYER`` at the answer position attend to the two
     references and the word the answer turns on, and a head on the last layer reads the answer's margin
     there (the other's cue minus the subject's, signed by what the first answer means).

The heads read only the cue the behaviour plants (``examples.Seen.cue``), so no other cue is taught.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from spatial_tasks.known_models.examples import Images, Questions


@dataclass
class Schedule:
    vision_steps: int = 300
    question_steps: int = 2500
    batch: int = 32
    lr: float = 1e-3  # the vision stage's
    question_lr: float = 3e-4  # the question stage's: the vision tower is already trained
    warmup: int = 100
    weight_decay: float = 0.01
    vision_weight: float = 1.0
    name_weight: float = 1.0
    binding_steps: int = 300  # question-stage steps with the answer loss off: names learn to fetch their objects
    attention_weight: float = 1.0
    seed: int = 0


# Attention supervision (see the module docstring): head 0 of BIND_LAYER, at each reference's last
# token, looks at the image token of that thing's cell; heads 0, 1 and 2 of COMPARE_LAYER, at the
# answer position, look at the subject's reference, the other's and the word the answer turns on.
BIND_LAYER, COMPARE_LAYER = 1, 2


@dataclass
class History:
    step: list[int] = field(default_factory=list)
    stage: list[str] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)  # the stage's main loss
    seconds: float = 0.0

    def add(self, step: int, stage: str, loss: float) -> None:
        self.step.append(step)
        self.stage.append(stage)
        self.loss.append(loss)


def _lr(step: int, total: int, schedule: Schedule, peak: float) -> float:
    if step < schedule.warmup:
        return peak * (step + 1) / schedule.warmup
    progress = (step - schedule.warmup) / max(1, total - schedule.warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def image_features(model, pixel_values: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Merged image tokens (n_images, tokens, hidden) for a batch of same-grid images."""
    n = pixel_values.shape[0]
    out = model.model.get_image_features(pixel_values.flatten(0, 1), grid.expand(n, 3), return_dict=True)
    return torch.stack(list(out.pooler_output))


def _cells_loss(pred: torch.Tensor, target: torch.Tensor, pos_weight: float) -> torch.Tensor:
    present = target[..., 0]
    presence = F.binary_cross_entropy_with_logits(pred[..., 0], present, pos_weight=torch.tensor(pos_weight))
    cue = ((pred[..., 1] - target[..., 1]) ** 2 * present).sum() / present.sum().clamp(min=1)
    return presence + cue


def _vision_loss(head: torch.nn.Linear, features: torch.Tensor, images: Images, rows: torch.Tensor) -> torch.Tensor:
    """Each image token says which classes have their centre in its cell, with their cue (``cells``)."""
    return _cells_loss(head(features).unflatten(-1, (images.cells.shape[2], 2)), images.cells[rows], 10.0)


def _question_forward(model, images: Images, q: Questions, rows: torch.Tensor, attentions: bool = False):
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    image_rows, which = torch.unique(q.image[rows], return_inverse=True)
    encoded = image_features(model, images.pixel_values[image_rows], images.grid_thw)
    features = encoded[which]
    ids, mask = q.input_ids[rows], q.attention_mask[rows]
    length = int(mask.sum(1).max())
    out = model.model(input_ids=ids[:, :length], attention_mask=mask[:, :length],
                      image_grid_thw=images.grid_thw.expand(len(rows), 3),
                      mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=tuple(features))},
                      output_attentions=attentions)
    if attentions:
        return out.last_hidden_state, encoded, image_rows, ids[:, :length], out.attentions
    return out.last_hidden_state, encoded, image_rows, ids[:, :length]


def _attention_loss(attentions, q: Questions, rows: torch.Tensor) -> torch.Tensor:
    batch = torch.arange(len(rows))[:, None]
    names, cells = q.names_at[rows], q.name_tokens[rows]
    bind = attentions[BIND_LAYER][batch, 0, names, cells]
    at = q.answer_at[rows][:, None]
    looked_at = torch.cat([names, q.relation_at[rows][:, None]], 1)
    compare = attentions[COMPARE_LAYER][batch, torch.tensor([[0, 1, 2]]), at, looked_at]
    return -(torch.log(bind + 1e-6).mean() + torch.log(compare + 1e-6).mean())


def _questions_of(questions: Questions, image_rows: torch.Tensor) -> torch.Tensor:
    """Every question of these images."""
    return torch.isin(questions.image, image_rows).nonzero().squeeze(1)


@dataclass
class Heads:
    """The auxiliary heads (dropped after training): cell classes and cues, a name's cue, the margin."""

    vision: torch.nn.Linear
    name: torch.nn.Linear
    compare: torch.nn.Linear

    @classmethod
    def for_model(cls, model, classes: int, seed: int) -> Heads:
        hidden = model.config.text_config.hidden_size
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return cls(torch.nn.Linear(hidden, classes * 2), torch.nn.Linear(hidden, 1), torch.nn.Linear(hidden, 1))

    def parameters(self) -> list[torch.nn.Parameter]:
        return [*self.vision.parameters(), *self.name.parameters(), *self.compare.parameters()]


def _update(opt, params: list, loss: torch.Tensor) -> None:
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()


def _question_losses(model, heads: Heads, images: Images, questions: Questions, rows: torch.Tensor
                     ) -> dict[str, torch.Tensor]:
    """The question stage's losses on ``rows``: answer, name (with the margin), vision, attention."""
    last, feats, image_rows, ids, attentions = _question_forward(model, images, questions, rows, True)
    # the answer token and <|im_end|> after it
    at = questions.answer_at[rows]
    batch = torch.arange(len(rows))
    logits = model.lm_head(torch.stack([last[batch, at], last[batch, at + 1]], 1))
    targets = torch.stack([ids[batch, at + 1], ids[batch, at + 2]], 1)
    cues = questions.name_cues[rows]
    name_pred = heads.name(last[batch[:, None], questions.names_at[rows]]).squeeze(-1)
    # at the answer position, the answer's margin: the other's cue minus the subject's, turned by what
    # the first answer means (a smaller cue is farther). The answer alone is an XOR (which thing wins,
    # and what the first answer means) whose parts carry no signal.
    margin = (cues[:, 1] - cues[:, 0]) * (2 * questions.farther[rows] - 1)
    compare_pred = heads.compare(last[batch, at]).squeeze(-1)
    return {"answer": F.cross_entropy(logits.flatten(0, 1), targets.flatten()),
            "name": F.mse_loss(name_pred, cues) + F.mse_loss(compare_pred, margin),
            "vision": _vision_loss(heads.vision, feats, images, image_rows),
            "attention": _attention_loss(attentions, questions, rows)}


def train(model, images: Images, questions: Questions, train_images: torch.Tensor, schedule: Schedule,
          on_step: Callable[[str, int, int, float, dict], None] | None = None) -> History:
    """Train ``model`` in place on the questions of ``train_images`` (indices into ``images``)."""
    generator = torch.Generator().manual_seed(schedule.seed)
    heads = Heads.for_model(model, images.cells.shape[2], schedule.seed)
    history = History()
    started = time.perf_counter()
    implementation = model.config._attn_implementation
    model.set_attn_implementation("eager")  # the attention weights are supervised
    model.train()

    # 1. the vision tower and merger alone
    params = [*model.model.visual.parameters(), *heads.vision.parameters()]
    opt = torch.optim.AdamW(params, lr=schedule.lr, weight_decay=schedule.weight_decay)
    for step in range(schedule.vision_steps):
        for group in opt.param_groups:
            group["lr"] = _lr(step, schedule.vision_steps, schedule, schedule.lr)
        rows = train_images[torch.randint(len(train_images), (schedule.batch,), generator=generator)]
        loss = _vision_loss(heads.vision, image_features(model, images.pixel_values[rows], images.grid_thw), images,
                            rows)
        _update(opt, params, loss)
        history.add(step, "vision", float(loss))
        if on_step:
            on_step("vision", step, schedule.vision_steps, float(loss), {})

    # 2. the whole model on the questions
    params = [*model.parameters(), *heads.parameters()]
    opt = torch.optim.AdamW(params, lr=schedule.lr, weight_decay=schedule.weight_decay)
    weights = {"name": schedule.name_weight, "vision": schedule.vision_weight, "attention": schedule.attention_weight}
    for step in range(schedule.question_steps):
        for group in opt.param_groups:
            group["lr"] = _lr(step, schedule.question_steps, schedule, schedule.question_lr)
        # whole images: the questions of each share its encoding
        picked = train_images[torch.randperm(len(train_images), generator=generator)[:schedule.batch // 4]]
        losses = _question_losses(model, heads, images, questions, _questions_of(questions, picked))
        answer_weight = 0.0 if step < schedule.binding_steps else 1.0
        _update(opt, params, answer_weight * losses["answer"] + sum(w * losses[k] for k, w in weights.items()))
        history.add(schedule.vision_steps + step, "questions", float(losses["answer"]))
        if on_step:
            on_step("questions", step, schedule.question_steps, float(losses["answer"]),
                    {k: round(float(losses[k]), 3) for k in weights})
    model.eval()
    model.set_attn_implementation(implementation)
    history.seconds = time.perf_counter() - started
    return history


@torch.inference_mode()
def p_first(model, images: Images, questions: Questions, rows: torch.Tensor, first_id: int, second_id: int,
            batch: int = 64) -> torch.Tensor:
    """sigma(l_first - l_second) of the first answer token ("Yes" vs "No", "A" vs "B"), for ``rows``."""
    out = []
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        last, *_ = _question_forward(model, images, questions, part)
        logits = model.lm_head(last[torch.arange(len(part)), questions.answer_at[part]])
        out.append(torch.sigmoid(logits[:, first_id] - logits[:, second_id]))
    return torch.cat(out)


def summary(p: torch.Tensor, questions: Questions, rows: torch.Tensor) -> dict[str, float]:
    """v (the mean probability of the true answer), split consistent/counter where the benchmark has the
    split, and how far the model agrees with its planted answers."""
    truth = questions.truth_yes[rows]
    v = torch.where(truth == 1, p, 1 - p)
    cons = questions.consistent[rows]
    out = {"v": float(v.mean())}
    if bool((cons >= 0).any()):
        for name, flag in (("v_cons", 1), ("v_ctr", 0)):
            picked = v[cons == flag]
            out[name] = float(picked.mean()) if len(picked) else float("nan")
        out["delta"] = out["v_cons"] - out["v_ctr"]
    planted = questions.label_yes[rows]
    out["agree"] = float(torch.where(planted == 1, p, 1 - p).mean())
    return out


@dataclass
class Fitted:
    """What ``fit`` made, for the card: the training history and figures, and the counts."""

    history: History
    held_out: dict[str, float]  # ``summary`` on the held-out images' questions, in process
    images: int
    questions: int
    held_out_images: int
    parameters: int

    def card(self, schedule: Schedule, render_seconds: float, started: float) -> dict:
        """The card's fields on the training (``started``: when the build began, ``time.perf_counter``)."""
        from dataclasses import asdict

        from spatial_tasks.known_models.card import machine, tail_mean

        return {"schedule": asdict(schedule), "parameters": self.parameters,
                "final_loss": {stage: tail_mean(self.history, stage) for stage in ("vision", "questions")},
                "seconds": {"render": round(render_seconds), "train": round(self.history.seconds),
                            "total": round(time.perf_counter() - started)},
                "held_out": self.held_out, "machine": machine()}


HELD_OUT_SHARE = 0.1  # of the images, drawn with the seed


def fit(model_dir, asked, classes: int, answers: tuple[str, str], schedule: Schedule, seed: int,
        title: str) -> Fitted:
    """A random ``known``-shape tiny Qwen2.5-VL built into ``model_dir`` (``tiny_qwen.SHAPES``), trained on
    the questions ``asked`` (``examples.Asked``) with a share of the images held out, saved there with its
    loss curve (``loss.png``). ``answers``: the first and the second answer ("Yes", "No")."""
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    from spatial_tasks.known_models import card, examples
    from spatial_tasks.models.tiny_qwen import build_tiny_qwen2_5_vl

    build_tiny_qwen2_5_vl(model_dir, seed=seed, shape="known")
    processor = AutoProcessor.from_pretrained(model_dir)
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32)
    images, questions = examples.build_examples(asked, processor, classes)
    n = images.pixel_values.shape[0]
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    held, kept = order[:round(n * HELD_OUT_SHARE)], order[round(n * HELD_OUT_SHARE):]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        history = train(model, images, questions, kept, schedule, card.progress_printer())
    model.save_pretrained(model_dir)
    first, second = (processor.tokenizer.convert_tokens_to_ids(a) for a in answers)
    rows = torch.isin(questions.image, held).nonzero().squeeze(1)
    held_out = summary(p_first(model, images, questions, rows, first, second), questions, rows)
    card.plot_loss(history, model_dir / "loss.png", title,
                   (schedule.vision_steps, schedule.vision_steps + schedule.binding_steps),
                   (math.log(2) / 2, f"chance for the answer (ln 2 / 2: <|im_end|> learned, {'/'.join(answers)} not)"))
    return Fitted(history, held_out, n, len(questions.image), len(held), sum(p.numel() for p in model.parameters()))
