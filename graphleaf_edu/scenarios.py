"""Every way the scenarios of this suite break ``copy.deepcopy`` (or a queue), and their fixes.

A scenario's code is shown to the student and is exactly what runs: ``code(fix)`` is the text
that ``run(fix)`` executes, in a fresh namespace, under a file name that tracebacks can show.
Warnings raised by that code are recorded in ``Outcome.warnings``, never printed, so notebook
outputs stay deterministic (a warning PyTorch gives once per process is recorded once).

    >>> outcome = SCENARIOS["model_cache"].run("detach_at_source")
    >>> outcome.ok, outcome.error_line
    (True, None)
"""
from __future__ import annotations

import linecache
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from graphleaf_edu.errors import COWARDLY, GRAPH_LEAVES, error_line, warning_line

NONE = "none"
PRELUDE = "import copy\nimport torch\nfrom torch import nn\n\n"


@dataclass(frozen=True)
class ExpectedError:
    """The real exception a scenario raises: its type and a substring of its message."""

    type: type[BaseException]
    contains: str

    def matches(self, error: BaseException | None) -> bool:
        return isinstance(error, self.type) and self.contains in str(error)


@dataclass(frozen=True)
class Fix:
    """One way out. ``copy_code`` binds ``copied``; ``setup_code``, if given, replaces the scenario's setup."""

    key: str
    title: str
    copy_code: str
    cost: str
    setup_code: str | None = None
    mutates_original: bool = False


@dataclass(frozen=True, eq=False)
class Outcome:
    """What running one fix of one scenario did. ``error_line`` is ``"Type: first line"``, deterministic."""

    scenario: str
    fix: str
    ok: bool
    error: BaseException | None
    error_line: str | None
    copied: Any
    original: Any
    namespace: dict[str, Any]
    code: str
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    """A failure: ``setup_code`` builds ``target``; deep-copying it (fix ``"none"``) raises ``error``.

    ``culprit`` is the path, as ``find_nonleaf`` writes it, of the non-leaf tensor inside ``target``
    that causes the error ("" when ``target`` is that tensor).
    """

    key: str
    title: str
    summary: str
    setup_code: str
    target: str
    culprit: str
    error: ExpectedError
    fixes: tuple[Fix, ...]
    source: str

    def __post_init__(self):
        keys = self.fix_keys()
        if not keys or keys[0] != NONE or len(set(keys)) != len(keys):
            raise ValueError(f"scenario {self.key!r}: fixes need unique keys, the first being {NONE!r}; got {keys}")

    def fix_keys(self) -> list[str]:
        return [fix.key for fix in self.fixes]

    def fix(self, key: str = NONE) -> Fix:
        for fix in self.fixes:
            if fix.key == key:
                return fix
        raise KeyError(f"scenario {self.key!r} has no fix {key!r}; choose one of {self.fix_keys()}")

    def code(self, fix_key: str = NONE) -> str:
        """The exact code that ``run(fix_key)`` executes."""
        fix = self.fix(fix_key)
        return self._setup_text(fix) + fix.copy_code

    def namespace(self, fix: str | None = None) -> dict[str, Any]:
        """A fresh namespace in which the setup (of ``fix``, if it replaces it) has just run."""
        namespace, _ = self._run_setup(self.fix(fix or NONE))
        return namespace

    def run(self, fix_key: str = NONE) -> Outcome:
        """Run the setup and the copy; the scenario's own error is returned in the outcome, not raised."""
        fix = self.fix(fix_key)
        namespace, recorded = self._run_setup(fix)
        error = None
        try:
            recorded += self._run_copy(fix, namespace)
        except self.error.type as raised:
            error = raised
        return Outcome(
            scenario=self.key,
            fix=fix.key,
            ok=error is None,
            error=error,
            error_line=error_line(error) if error else None,
            copied=namespace.get("copied"),
            original=namespace[self.target],
            namespace=namespace,
            code=self.code(fix.key),
            warnings=tuple(recorded),
        )

    def reproduce(self) -> None:
        """Raise the real error, from the scenario's own code (for a notebook cell that shows it)."""
        fix = self.fix(NONE)
        namespace, _ = self._run_setup(fix)
        self._run_copy(fix, namespace)
        raise AssertionError(
            f"scenario {self.key!r} did not fail on torch {torch.__version__}: expected "
            f"{self.error.type.__name__} containing {self.error.contains!r}. What it teaches needs updating."
        )

    def _setup_text(self, fix: Fix) -> str:
        return PRELUDE + (fix.setup_code or self.setup_code) + "\n"

    def _filename(self, fix: Fix) -> str:
        name = f"<scenario {self.key}, fix {fix.key}>"
        text = self.code(fix.key)
        linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
        return name

    def _run_setup(self, fix: Fix) -> tuple[dict[str, Any], list[str]]:
        namespace: dict[str, Any] = {"__name__": f"graphleaf_scenario_{self.key}"}
        return namespace, _execute(self._setup_text(fix), self._filename(fix), namespace)

    def _run_copy(self, fix: Fix, namespace: dict[str, Any]) -> list[str]:
        # Padded with the setup's line count so that traceback line numbers point into code().
        offset = self._setup_text(fix).count("\n")
        return _execute("\n" * offset + fix.copy_code, self._filename(fix), namespace)


def _execute(source: str, filename: str, namespace: dict[str, Any]) -> list[str]:
    """exec ``source``; return the warnings it raised as ``"Category: first line"``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (running the shown code is the point)
    return [warning_line(w) for w in caught]


# --- the code of the scenarios ------------------------------------------------------------------

DEEPCOPY_ERROR = ExpectedError(RuntimeError, GRAPH_LEAVES)
DETACHES_INSIDE = "every non-leaf tensor inside becomes detach().clone(); the original is only read"
SAFE_DEEPCOPY_COST = "new memory; " + DETACHES_INSIDE


def _none(target: str) -> Fix:
    return Fix(NONE, "no fix: copy.deepcopy", f"copied = copy.deepcopy({target})", "it raises")


def _safe_deepcopy(target: str) -> Fix:
    return Fix(
        "safe_deepcopy",
        "graphleaf_edu.safe_deepcopy",
        f"from graphleaf_edu import safe_deepcopy\ncopied = safe_deepcopy({target})",
        SAFE_DEEPCOPY_COST,
    )


def _detach_clone(target: str) -> Fix:
    return Fix(
        "detach_clone",
        "detach().clone()",
        f"copied = {target}.detach().clone()",
        f"new memory; the copy is a leaf outside the graph; {target} keeps its graph",
    )


INTERMEDIATE_TENSOR = Scenario(
    key="intermediate_tensor",
    title="An intermediate tensor after backward()",
    summary=(
        "y = x * 2 is made by an operation, so it is not a leaf: it has a grad_fn. "
        "Tensor.__deepcopy__ accepts leaves only, even after backward() has run."
    ),
    setup_code=(
        "torch.manual_seed(0)\n"
        "x = torch.randn(2, 4, requires_grad=True)\n"
        "y = x * 2\n"
        "y.sum().backward()"
    ),
    target="y",
    culprit="",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("y"),
        _detach_clone("y"),
        Fix("detach", "detach()", "copied = y.detach()",
            "no copy at all: shares y's memory (writing to one changes the other); outside the graph"),
        _safe_deepcopy("y"),
    ),
    source="seed",
)

MODEL_OUTPUT = Scenario(
    key="model_output",
    title="A model's output",
    summary="A module's output is computed from its parameters, so it is a non-leaf tensor like any other result.",
    setup_code=(
        "torch.manual_seed(0)\n"
        "model = nn.Linear(4, 3)\n"
        "x = torch.randn(2, 4, requires_grad=True)\n"
        "output = model(x)"
    ),
    target="output",
    culprit="",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("output"),
        _detach_clone("output"),
        Fix(
            "no_grad",
            "compute it under torch.no_grad()",
            "copied = copy.deepcopy(output)",
            "no graph is recorded, so output cannot be backpropagated; the cheapest when no gradient is needed",
            setup_code=(
                "torch.manual_seed(0)\n"
                "model = nn.Linear(4, 3)\n"
                "x = torch.randn(2, 4, requires_grad=True)\n"
                "with torch.no_grad():\n"
                "    output = model(x)"
            ),
        ),
        _safe_deepcopy("output"),
    ),
    source="seed",
)


def _rows_setup(item: str, data: str) -> str:
    return (
        "from torch.utils.data import DataLoader, Dataset\n"
        "\n"
        "class Rows(Dataset):\n"
        "    def __init__(self, data):\n"
        "        self.data = data\n"
        "    def __len__(self):\n"
        "        return len(self.data)\n"
        "    def __getitem__(self, i):\n"
        f"        return {item}\n"
        "\n"
        "torch.manual_seed(0)\n"
        "x = torch.randn(8, 4, requires_grad=True)\n"
        f"dataset = Rows({data})"
    )


FIRST_BATCH = "copied = next(iter(DataLoader(dataset, batch_size=2)))"

DATASET_GETITEM = Scenario(
    key="dataset_getitem",
    title="A Dataset whose __getitem__ deep-copies a non-leaf row",
    summary=(
        "The rows are x * 2, so each row self.data[i] is a non-leaf view, and deep-copying it in "
        "__getitem__ raises. With num_workers=0 this happens here, in this process; with worker "
        "processes the error depends on the start method (see graphleaf_edu.dataloading)."
    ),
    setup_code=_rows_setup("copy.deepcopy(self.data[i])", "x * 2"),
    target="dataset",
    culprit=".data",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, "no fix: load a batch", FIRST_BATCH, "it raises"),
        Fix(
            "detach_at_construction",
            "detach the data when building the dataset",
            FIRST_BATCH,
            "rows are leaves without grad, so batches carry no graph back to x; the dataset pickles for workers",
            setup_code=_rows_setup("copy.deepcopy(self.data[i])", "(x * 2).detach()"),
        ),
        Fix(
            "detach_in_getitem",
            "detach().clone() in __getitem__",
            FIRST_BATCH,
            "a copy per item; the dataset still holds the graph, so spawn/forkserver workers still refuse it",
            setup_code=_rows_setup("self.data[i].detach().clone()", "x * 2"),
        ),
        Fix(
            "safe_deepcopy",
            "graphleaf_edu.safe_deepcopy of the dataset",
            "from graphleaf_edu import safe_deepcopy\n"
            "copied = next(iter(DataLoader(safe_deepcopy(dataset), batch_size=2)))",
            "copies the whole dataset once, its data detached; " + DETACHES_INSIDE,
        ),
    ),
    source="seed",
)


def _cached_setup(cache: str = "out", extra: str = "") -> str:
    return (
        "class Cached(nn.Module):\n"
        "    def __init__(self, d_in, d_out):\n"
        "        super().__init__()\n"
        "        self.linear = nn.Linear(d_in, d_out)\n"
        "        self.cache = None\n"
        "    def forward(self, x):\n"
        "        out = self.linear(x)\n"
        f"        self.cache = {cache}\n"
        "        return out\n"
        f"{extra}"
        "\n"
        "torch.manual_seed(0)\n"
        "model = Cached(4, 3)\n"
        "output = model(torch.randn(2, 4))"
    )


MODEL_CACHE = Scenario(
    key="model_cache",
    title="A model that caches an activation in forward()",
    summary=(
        "forward() stores its output on the module. The parameters are leaves, but self.cache is not, "
        "and copy.deepcopy(model) copies every attribute."
    ),
    setup_code=_cached_setup(),
    target="model",
    culprit=".cache",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("model"),
        Fix(
            "detach_at_source",
            "store out.detach() in forward",
            "copied = copy.deepcopy(model)",
            "a one-word change where the cache is made; the cache no longer carries a graph",
            setup_code=_cached_setup(cache="out.detach()"),
        ),
        Fix(
            "custom_deepcopy",
            "a custom __deepcopy__ that skips the cache",
            "copied = copy.deepcopy(model)",
            "more code in the class; the copy starts with an empty cache; the original is untouched",
            setup_code=_cached_setup(extra=(
                "    def __deepcopy__(self, memo):\n"
                "        twin = type(self).__new__(type(self))\n"
                "        memo[id(self)] = twin\n"
                "        twin.__setstate__(copy.deepcopy({**self.__dict__, \"cache\": None}, memo))\n"
                "        return twin\n"
            )),
        ),
        Fix(
            "getstate",
            "a __getstate__ that drops the cache",
            "copied = copy.deepcopy(model)",
            "two lines; also changes pickling (torch.save of the whole model drops the cache too)",
            setup_code=_cached_setup(extra=(
                "    def __getstate__(self):\n"
                "        return {**super().__getstate__(), \"cache\": None}\n"
            )),
        ),
        Fix(
            "state_dict",
            "load the state_dict into a fresh instance",
            "copied = Cached(4, 3)\ncopied.load_state_dict(model.state_dict())",
            "needs the constructor's arguments (4, 3); copies parameters and buffers only, no other attribute",
        ),
        Fix(
            "clear_cache",
            "set model.cache = None, then deepcopy",
            "model.cache = None\ncopied = copy.deepcopy(model)",
            "mutates the original: its cache is gone",
            mutates_original=True,
        ),
        _safe_deepcopy("model"),
    ),
    source="seed",
)

OLD_WEIGHT_NORM = Scenario(
    key="old_weight_norm",
    title="The old torch.nn.utils.weight_norm, before any forward",
    summary=(
        "weight_norm stores weight = g * v / |v| on the module as a plain, non-leaf tensor as soon as it is "
        "applied, so even a fresh module fails (the hint in the error message is about this). "
        "torch.nn.utils.parametrizations.weight_norm recomputes weight on access and deep-copies fine."
    ),
    setup_code="torch.manual_seed(0)\nmodel = nn.utils.weight_norm(nn.Linear(4, 3))",
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("model"),
        Fix(
            "parametrizations",
            "torch.nn.utils.parametrizations.weight_norm",
            "copied = copy.deepcopy(model)",
            "the current API, same values; its state_dict keys differ (parametrizations.weight.original0/1)",
            setup_code="torch.manual_seed(0)\nmodel = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))",
        ),
        Fix(
            "remove_weight_norm",
            "nn.utils.remove_weight_norm, then deepcopy",
            "nn.utils.remove_weight_norm(model)\ncopied = copy.deepcopy(model)",
            "mutates the original: it loses weight normalisation (weight becomes a plain Parameter)",
            mutates_original=True,
        ),
        _safe_deepcopy("model"),
    ),
    source="wild",
)

OLD_SPECTRAL_NORM = Scenario(
    key="old_spectral_norm",
    title="The old torch.nn.utils.spectral_norm, after a forward",
    summary=(
        "spectral_norm recomputes weight = weight_orig / sigma in every forward (train or eval) and stores "
        "it on the module: non-leaf from the first forward on. "
        "torch.nn.utils.parametrizations.spectral_norm deep-copies fine, but runs its own power iteration, "
        "so its outputs differ: it is a replacement, not a copy."
    ),
    setup_code=(
        "torch.manual_seed(0)\n"
        "model = nn.utils.spectral_norm(nn.Linear(4, 3))\n"
        "model(torch.randn(2, 4))"
    ),
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("model"),
        Fix(
            "state_dict",
            "load the state_dict into a fresh spectral-normed module",
            "copied = nn.utils.spectral_norm(nn.Linear(4, 3))\ncopied.load_state_dict(model.state_dict())",
            "needs to know how the module was built; weight_orig, u and v are copied",
        ),
        Fix(
            "remove_spectral_norm",
            "nn.utils.remove_spectral_norm, then deepcopy",
            "nn.utils.remove_spectral_norm(model)\ncopied = copy.deepcopy(model)",
            "mutates the original: it loses spectral normalisation (weight is frozen at its last value)",
            mutates_original=True,
        ),
        _safe_deepcopy("model"),
    ),
    source="wild",
)

PRUNING = Scenario(
    key="pruning",
    title="torch.nn.utils.prune",
    summary=(
        "Pruning keeps weight_orig and weight_mask and stores weight = weight_orig * weight_mask on the "
        "module as a plain, non-leaf tensor, from the moment it is applied."
    ),
    setup_code=(
        "from torch.nn.utils import prune\n"
        "\n"
        "torch.manual_seed(0)\n"
        "model = nn.Linear(4, 3)\n"
        "prune.l1_unstructured(model, \"weight\", amount=0.5)"
    ),
    target="model",
    culprit=".weight",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("model"),
        Fix(
            "prune_remove",
            "prune.remove, then deepcopy",
            "prune.remove(model, \"weight\")\ncopied = copy.deepcopy(model)",
            "mutates the original: pruning becomes permanent (the mask is gone, the zeros stay)",
            mutates_original=True,
        ),
        _safe_deepcopy("model"),
    ),
    source="wild",
)


def _hook_setup(body: str, before: str = "") -> str:
    return (
        "torch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())\n"
        f"{before}"
        "\n"
        "def keep_output(module, inputs, output):\n"
        f"    {body}\n"
        "\n"
        "model[0].register_forward_hook(keep_output)\n"
        "model(torch.randn(2, 4))"
    )


FORWARD_HOOK = Scenario(
    key="forward_hook",
    title="A forward hook that keeps activations on the module",
    summary=(
        "A hook that stores the output on the module (for a feature loss, logging, a target network) "
        "leaves a non-leaf tensor inside the model. A hook that stores it outside the module does not."
    ),
    setup_code=_hook_setup("module.activation = output"),
    target="model",
    culprit="[0].activation",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("model"),
        Fix(
            "detach_at_source",
            "store output.detach() in the hook",
            "copied = copy.deepcopy(model)",
            "no gradient can flow through the stored activation",
            setup_code=_hook_setup("module.activation = output.detach()"),
        ),
        Fix(
            "outside_dict",
            "keep activations in a dict outside the module",
            "copied = copy.deepcopy(model)",
            "gradient still flows through the stored activation; the copy's hook writes into the same dict",
            setup_code=_hook_setup("activations[\"linear\"] = output", before="activations = {}\n"),
        ),
        Fix(
            "state_dict",
            "load the state_dict into a fresh model",
            "copied = nn.Sequential(nn.Linear(4, 3), nn.ReLU())\ncopied.load_state_dict(model.state_dict())",
            "needs the architecture; hooks and other attributes are not copied",
        ),
        _safe_deepcopy("model"),
    ),
    source="wild",
)


def _logging_net_setup(stat: str = "out.mean()", ema_before_forward: bool = False) -> str:
    ema = "ema = AveragedModel(model)\n" if ema_before_forward else ""
    return (
        "from torch.optim.swa_utils import AveragedModel\n"
        "\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.linear = nn.Linear(4, 3)\n"
        "        self.stats = {}\n"
        "    def forward(self, x):\n"
        "        out = self.linear(x)\n"
        f"        self.stats[\"mean\"] = {stat}  # for logging\n"
        "        return out\n"
        "\n"
        "torch.manual_seed(0)\n"
        "model = Net()\n"
        f"{ema}"
        "model(torch.randn(2, 4)).sum().backward()"
    )


EMA_COPY = Scenario(
    key="ema_copy",
    title="An EMA / SWA / teacher copy taken after training started",
    summary=(
        "AveragedModel deep-copies the model when it is created, as timm's and ultralytics' EMA, "
        "Lightning's SWA callback and teacher networks do. Created after a training step, it meets "
        "whatever forward() left on the model: here a logging dict holding a non-leaf tensor."
    ),
    setup_code=_logging_net_setup(),
    target="model",
    culprit=".stats['mean']",
    error=DEEPCOPY_ERROR,
    fixes=(
        Fix(NONE, "no fix: AveragedModel(model)", "copied = AveragedModel(model)", "it raises"),
        Fix(
            "copy_before_forward",
            "create the EMA before the first forward",
            "ema.update_parameters(model)\ncopied = ema",
            "the copy is taken once, at construction; each update copies values under no_grad",
            setup_code=_logging_net_setup(ema_before_forward=True),
        ),
        Fix(
            "detach_at_source",
            "log a number: out.mean().item()",
            "copied = AveragedModel(model)",
            "fixes the model itself: logging wants a number anyway (.item(), or .detach() for a tensor)",
            setup_code=_logging_net_setup(stat="out.mean().item()"),
        ),
        Fix(
            "safe_deepcopy",
            "AveragedModel(safe_deepcopy(model))",
            "from graphleaf_edu import safe_deepcopy\ncopied = AveragedModel(safe_deepcopy(model))",
            "two copies (AveragedModel deep-copies again); " + DETACHES_INSIDE,
        ),
    ),
    source="wild",
)

NONLEAF_GRAD = Scenario(
    key="nonleaf_grad",
    title="A leaf whose .grad is non-leaf (backward with create_graph=True)",
    summary=(
        "w is a leaf, but Tensor.__deepcopy__ also deep-copies w.grad, and create_graph=True made that "
        "gradient part of a graph (for second derivatives). nn.Parameter copies drop .grad, so only "
        "plain tensors fail this way."
    ),
    setup_code=(
        "torch.manual_seed(0)\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "(w ** 3).sum().backward(create_graph=True)"
    ),
    target="w",
    culprit=".grad",
    error=DEEPCOPY_ERROR,
    fixes=(
        _none("w"),
        Fix(
            "autograd_grad",
            "torch.autograd.grad instead of backward",
            "copied = copy.deepcopy(w)",
            "the gradient is returned, not stored in w.grad (and no reference cycle through w.grad)",
            setup_code=(
                "torch.manual_seed(0)\n"
                "w = torch.randn(3, requires_grad=True)\n"
                "(grad,) = torch.autograd.grad((w ** 3).sum(), w, create_graph=True)"
            ),
        ),
        Fix(
            "clear_grad",
            "w.grad = None, then deepcopy",
            "w.grad = None\ncopied = copy.deepcopy(w)",
            "mutates the original: its gradient is dropped (what PyTorch's warning advises after use)",
            mutates_original=True,
        ),
        Fix(
            "detach_clone",
            "detach().clone().requires_grad_()",
            "copied = w.detach().clone().requires_grad_()",
            "a fresh leaf with the same values and no .grad",
        ),
        _safe_deepcopy("w"),
    ),
    source="wild",
)


def _queue_send(value: str) -> str:
    return f"queue.put({value})\ncopied = queue.get()"


MP_QUEUE = Scenario(
    key="mp_queue",
    title="Sending a non-leaf tensor through a torch.multiprocessing queue",
    summary=(
        "torch.multiprocessing's pickler (ForkingPickler) refuses non-leaf tensors that require grad: "
        "autograd cannot cross processes. SimpleQueue.put pickles in the caller, so the error surfaces "
        "here. multiprocessing.Queue.put pickles in a background feeder thread: the same error is only "
        "printed there, put() returns, and the receiver's get() waits forever. Plain pickle.dumps "
        "does not refuse: it silently drops the graph."
    ),
    setup_code=(
        "import torch.multiprocessing as mp\n"
        "\n"
        "torch.manual_seed(0)\n"
        "x = torch.randn(2, 4, requires_grad=True)\n"
        "y = x * 2\n"
        "queue = mp.SimpleQueue()"
    ),
    target="y",
    culprit="",
    error=ExpectedError(RuntimeError, COWARDLY),
    fixes=(
        Fix(NONE, "no fix: put y on the queue", _queue_send("y"), "it raises"),
        Fix(
            "detach",
            "put y.detach()",
            _queue_send("y.detach()"),
            "sends y's own memory: torch moves it to shared memory and the receiver maps the same storage",
        ),
        Fix(
            "detach_clone",
            "put y.detach().clone()",
            _queue_send("y.detach().clone()"),
            "sends a fresh copy (moved to shared memory); y is untouched",
        ),
        Fix(
            "safe_deepcopy",
            "put safe_deepcopy(y)",
            "from graphleaf_edu import safe_deepcopy\n" + _queue_send("safe_deepcopy(y)"),
            "works for whole objects (dicts of tensors, modules); " + DETACHES_INSIDE,
        ),
    ),
    source="wild",
)

SCENARIOS: dict[str, Scenario] = {
    scenario.key: scenario
    for scenario in (
        INTERMEDIATE_TENSOR, MODEL_OUTPUT, DATASET_GETITEM, MODEL_CACHE,
        OLD_WEIGHT_NORM, OLD_SPECTRAL_NORM, PRUNING, FORWARD_HOOK, EMA_COPY, NONLEAF_GRAD, MP_QUEUE,
    )
}
