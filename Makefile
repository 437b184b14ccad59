# Two commands for everyone: `make lab` and `make test`. The rest are for maintainers.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LOCK := requirements/lock.txt
STAMP := $(VENV)/.graphleaf-installed
PORT ?= 8888
NBVAL := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 300 -p no:cacheprovider
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test bench notebooks student lock setup graphviz kernels clean

lab: setup
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--ServerApp.port_retries=0 --ServerApp.root_dir=$(CURDIR) \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb

test: setup
	$(PY) -m pytest tests
	$(PY) -m pytest $(NBVAL) --nbval-kernel-name graphleaf-cpu notebooks
	$(PY) -m pytest $(NBVAL) --nbval-kernel-name graphleaf-cpu student
	@if $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then \
		echo "CUDA is available: running the notebooks on the GPU kernel too"; \
		$(PY) -m pytest $(NBVAL) --nbval-kernel-name graphleaf-gpu notebooks; \
	else echo "No CUDA device: GPU kernel run skipped"; fi

setup: $(STAMP) graphviz kernels

$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r $(LOCK)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

graphviz:
	@tools/ensure_graphviz.sh

kernels: $(STAMP)
	@$(PY) -m graphleaf_edu.kernels install >/dev/null

notebooks: setup
	$(PY) tools/execute_notebooks.py notebooks
	$(PY) tools/readme_picture.py

# Student copies of the exercises: solutions stubbed, hidden tests and outputs removed (nbgrader rules).
student: setup
	$(PY) -m graphleaf_edu.exercises student notebooks/exercises student/exercises

bench: setup
	$(PY) -m bench

lock:
	tools/freeze_lock.sh $(VENV)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
