# Two commands for everyone: `make lab` and `make test`. The rest are for maintainers (`make check`: the
# inner loop while editing, a few minutes; docs/contributing.md says which to run when).
PYTHON ?= python3
# Two environments, one per use (requirements/README.md): students get only what the lessons need.
#   .venv-lab  `make lab`: requirements/student.txt, the package's runtime dependencies
#   .venv      `make test` and every maintainer target: requirements/maintainer.txt (+ test tools)
LAB_VENV := .venv-lab
STUDENT_LOCK := requirements/student.txt
VENV := .venv
PY := $(VENV)/bin/python
MAINTAINER_LOCK := requirements/maintainer.txt
STAMP := $(VENV)/.graphleaf-installed
LAB_STAMP := $(LAB_VENV)/.graphleaf-installed
# The pyproject.toml extras each lock adds to the runtime dependencies (`make lock`).
STUDENT_EXTRAS := lab
MAINTAINER_EXTRAS := dev
PORT ?= 8888
# A kernel may take minutes to start while the hub tests start their students' servers beside nbval
# (nbval's 60 s default timed out once on a fresh clone); the cells' own timeout stays 300 s.
NBVAL := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 300 --nbval-kernel-startup-timeout 240 \
	-p no:cacheprovider
NBVAL_GPU := $(subst nbval_sanitize.cfg,nbval_sanitize_gpu.cfg,$(NBVAL))
# nbval on the CPU kernel runs NBVAL_WORKERS notebooks at a time (pytest-xdist; --dist loadfile keeps each
# notebook's cells in order on its own kernel): a kernel runs one cell at a time, so two use both of CI's
# cores. `make test NBVAL_WORKERS=0` runs them one by one (a busy shared machine).
NBVAL_WORKERS ?= 2
NBVAL_AT_ONCE := $(if $(filter-out 0,$(NBVAL_WORKERS)),-n $(NBVAL_WORKERS) --dist loadfile)
# The unit run spreads the test files over TEST_WORKERS pytest-xdist workers (--dist loadfile: each file's
# tests run in order on one worker, so its module fixtures, its JupyterLab or its built wheel, are made
# once); most slow files wait on a browser, a server, pip or a script, so two overlap well on two cores.
# `make test TEST_WORKERS=0` runs one test at a time. The CPU-budget check then judges the workers'
# merged report (tests/cpu_seconds.py). --no-loadscope-reorder keeps the files in the order tests/conftest.py
# gives them, the costliest first (xdist would otherwise start the files with the most tests first, and a
# long file started late ends the run alone).
TEST_WORKERS ?= 2
TEST_AT_ONCE := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
CPU_REPORT := test-artifacts/cpu-seconds.json
# The hub tests bound every wait themselves; `timeout` is the last guard. SIGINT lets pytest stop the test
# hub (its fixture's teardown) before exiting. `timeout` also gives pytest back SIGINT's default action,
# which sh takes from a command it starts in the background.
HUB_TESTS := timeout --signal=INT --kill-after=60 600 $(PY) -m pytest tests/test_classroom.py --durations=10
HUB_LOG := test-artifacts/hub-tests.log
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab lab-setup binder-check site test check bench notebooks student lock setup graphviz kernels clean gpu-wheels test-gpu
.PHONY: catalogs torch-move grading grading-bench
.PHONY: site-test
.PHONY: error-index
.PHONY: classroom classroom-stop classroom-bench classroom-setup

lab: lab-setup
	$(LAB_VENV)/bin/jupyter lab $(ROOT_FLAG) --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--ServerApp.port_retries=0 --ServerApp.root_dir=$(CURDIR) \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

test: setup classroom-setup
	@# --durations and --cpu-table print where the time went (CI shows both); the CPU report is what
	@# tools/cpu_budgets.py reads, and the budget check (tests/test_cpu_budgets.py) holds each file to its
	@# budget, over the report of the whole run (under xdist no test runs last: it runs right after).
	$(PY) -m pytest tests --ignore=tests/test_classroom.py $(TEST_AT_ONCE) --durations=25 --cpu-table --cpu-report $(CPU_REPORT)
	$(PY) -m pytest -p no:cacheprovider -q tests/test_cpu_budgets.py::test_no_test_file_went_past_its_cpu_budget --cpu-budgets-of $(CPU_REPORT)
	@# The hub tests mostly wait (on JupyterHub, its spawns, its culler: about 40 CPU s in 100 s here), so
	@# they run beside nbval, their output kept in $(HUB_LOG) and printed once both are done; a failure
	@# or a timeout of either fails `make test`.
	@mkdir -p $(dir $(HUB_LOG))
	$(HUB_TESTS) >$(HUB_LOG) 2>&1 & hub_pid=$$!; \
	$(PY) -m pytest $(NBVAL) $(NBVAL_AT_ONCE) --durations=10 --nbval-kernel-name graphleaf-cpu notebooks instructor; nbval=$$?; \
	wait $$hub_pid; hub=$$?; \
	echo "== the hub tests (tests/test_classroom.py), run beside nbval, exit status $$hub; their output ($(HUB_LOG)):"; \
	cat $(HUB_LOG); \
	echo "== nbval exit status $$nbval, the hub tests' $$hub"; \
	test $$nbval -eq 0 && test $$hub -eq 0
	@if $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then \
		echo "CUDA is available: running the notebooks on the GPU kernel too"; \
		$(PY) -m pytest $(NBVAL_GPU) --nbval-kernel-name graphleaf-gpu notebooks; \
	else echo "No CUDA device: GPU kernel run skipped"; fi

# The inner loop: lint, typing (tests/test_typing.py), the package's unit tests and the notebook
# conventions, each a file `make test` runs too. Nothing here starts a browser, a server or a venv.
CHECK_FILES := test_typing test_public_api test_public_names test_copying test_copy_corners test_copy_properties \
	test_diagnose test_errors test_graphs test_layers test_measure test_on_error test_scenarios test_tasks \
	test_views test_widgets test_catalogs test_messages test_error_index test_notebook_conventions test_predict_prompts \
	test_twin_sync test_course test_no_code_in_strings test_config_consistency test_readme test_cpu_budgets
CHECK_TESTS := $(addprefix tests/,$(addsuffix .py,$(CHECK_FILES)))
LINTED := graphleaf_edu graphleaf_edu_jupyter tools tests classroom bench
check: setup
	$(PY) -m ruff check --no-cache $(LINTED)
	$(PY) -m pytest -p no:cacheprovider --durations=10 --cpu-table $(CHECK_TESTS)

setup: $(STAMP) graphviz kernels

$(STAMP): pyproject.toml $(MAINTAINER_LOCK) tools/make_venv.sh graphleaf_edu_jupyter/__init__.py
	@PYTHON=$(PYTHON) tools/make_venv.sh $(VENV) $(MAINTAINER_LOCK)

# Without `dot` the lab still starts (graphs show as text); `make test` needs it.
lab-setup: $(LAB_STAMP)
	@tools/ensure_graphviz.sh --optional
	@$(LAB_VENV)/bin/python -m graphleaf_edu.kernels install >/dev/null

$(LAB_STAMP): pyproject.toml $(STUDENT_LOCK) tools/make_venv.sh graphleaf_edu_jupyter/__init__.py
	@PYTHON=$(PYTHON) tools/make_venv.sh $(LAB_VENV) $(STUDENT_LOCK)

graphviz:
	@tools/ensure_graphviz.sh

kernels: $(STAMP)
	@$(PY) -m graphleaf_edu.kernels install >/dev/null

notebooks: setup
	$(PY) tools/execute_notebooks.py notebooks instructor
	$(PY) tools/readme_picture.py

# Student copies of the exercises (solutions stubbed, hidden tests and outputs removed: nbgrader's rules)
# from the solution copies in instructor/, then the student-only tree a class can publish; REPO is the
# class's repository address (https://github.com/OWNER/NAME), written into the tree's badges and installs.
STUDENT_TREE ?= build/student-tree
student: setup
	$(PY) -m graphleaf_edu.exercises student instructor/exercises notebooks/exercises
	@# the Chinese student copies, from the Chinese solution copies; each then records the English student
	@# copy it translates (tools/twin_sync.py: the solution copies are held to their English twins)
	$(PY) -m graphleaf_edu.exercises student instructor/exercises/zh-CN notebooks/zh-CN/exercises
	$(PY) tools/twin_sync.py --stamp notebooks/zh-CN/exercises/*.ipynb
	$(PY) tools/student_tree.py $(STUDENT_TREE) $(if $(REPO),--repository $(REPO))

bench: setup
	$(PY) -m bench

# The README's error index, from the package's message constants (tests/test_error_index.py checks it).
error-index: $(STAMP)
	$(PY) tools/error_index.py

# A whole nbgrader round over all six exercises in both languages, the Chinese as a second assignment of
# the same course (tools/grading_round.py: generate, release, a right and a wrong submission, autograde,
# the gradebook); `make test` runs it for the English ex4 and the Chinese ex1 only. A few minutes.
grading: setup
	GRADING_ROUND=all $(PY) -m pytest tests/test_grading.py

# The check cells timed as autograde runs them, alone and 10 students at once: bench/grading.json, from
# which instructor/nbgrader_config.py sizes its per-cell timeout (docs/instructors.md).
grading-bench: setup
	$(PY) -m bench.grading --students 10

# A class on JupyterHub on this machine (docs/classroom.md); root, as it makes one account per student.
STUDENTS ?= 30
classroom: setup classroom-setup
	$(PY) -m classroom start --students $(STUDENTS)

classroom-stop: $(STAMP)
	$(PY) -m classroom stop

classroom-bench: setup classroom-setup
	$(PY) -m bench.classroom --students $(STUDENTS)

# The students' environment in /opt/graphleaf-classroom (student + hub locks) and the npm proxy.
classroom-setup: $(STAMP)
	@$(PY) -m classroom setup

# The book (Sphinx + MyST-NB, docs/conf.py) from the notebooks' stored outputs (nothing runs):
# build/site/index.html, and its Chinese edition (README.zh-CN.md, notebooks/zh-CN/) in build/site/zh-CN/. site-test builds the whole book and reads it in Chromium; `make test` reads a
# quick book of a few pages (tests/test_site.py).
site: setup
	$(PY) tools/book.py build/site

site-test: setup
	GRAPHLEAF_BOOK=full $(PY) -m pytest -p no:cacheprovider tests/test_site.py

# Binder's build rehearsed here: a fresh venv from binder/ as repo2docker builds it, then the Binder link
# opened in Chromium (tools/binder_check.py; a few minutes).
binder-check: setup
	$(PY) tools/binder_check.py $(BINDER_CHECK_ARGS)

# The suite on a CUDA machine that has torch but no network (docs/gpu-run.md): `make gpu-wheels` where
# packages can be downloaded, carry wheels/ to the GPU machine, run `make test-gpu` there.
gpu-wheels:
	PYTHON=$(if $(wildcard $(PY)),$(PY),$(PYTHON)) tools/gpu_wheels.sh wheels

test-gpu:
	$(PYTHON) tools/test_gpu.py $(GPU_ARGS)

# The package's words: extract every marked message, update each language's .po, compile the .mo the
# package ships (tools/catalogs.py; docs/translating.md says how a new message gets its translation).
catalogs: $(STAMP)
	$(PY) tools/catalogs.py

lock:
	PYTHON=$(PYTHON) tools/freeze_lock.sh "$(STUDENT_EXTRAS)" "$(MAINTAINER_EXTRAS)"

# Move the suite to another torch (docs/moving-torch.md): the release written once, the locks, the
# notebooks' stamps, the API page and every stored output; then the output diff to review before
# `make test` and the GPU run. Needs PyTorch's CPU index (or the new CPU wheel in pip's find-links).
torch-move:
	@test -n "$(TORCH)" || { echo "usage: make torch-move TORCH=X.Y.Z" >&2; exit 2; }
	$(PYTHON) tools/move_torch.py $(TORCH)
	$(MAKE) lock
	$(MAKE) setup
	$(PY) tools/stamp_notebooks.py
	$(PY) tools/api_docs.py
	$(MAKE) notebooks
	$(PY) tools/output_diff.py

clean:
	rm -rf $(VENV) $(LAB_VENV) .pytest_cache .hypothesis
