"""Classroom exercises: ``check_*`` functions with instant feedback, and the students' copies.

A check runs the student's answer for real (builds the model, copies it, trains a step, runs a
DataLoader under spawn) and returns a ``Feedback``: a short confirmation, "not yet" while the
answer is still nbgrader's stub (``raise NotImplementedError()``), or hints aimed at the
misconception behind a wrong answer, never the answer itself. Checks never raise, so "Run All"
goes on; while nbgrader validates or autogrades (it sets ``NBGRADER_EXECUTION``), a check that
does not pass raises ``AssertionError`` with its feedback, so nbgrader marks the cell failed.
Test cells ``print(feedback)``: nbgrader would read a returned value as a partial score.

``feedback`` is the framework; each exercise is a module of its own; ``student_copies`` makes
what ``nbgrader generate_assignment`` releases, from folders given as arguments
(``make student`` runs it):

    python -m graphleaf_edu.exercises student instructor/exercises notebooks/exercises
"""
from graphleaf_edu.exercises.cache_fix import CachingNetAsGiven, check_cache_fix
from graphleaf_edu.exercises.copy_cut import (
    COPY_QUESTION_NAMES,
    COPY_QUESTIONS,
    check_copy_cut,
    check_copy_predictions,
    copy_copy_facts,
    draw_copy_cut,
)
from graphleaf_edu.exercises.culprit import (
    TAGGER_VARIANTS,
    Encoder,
    Tagger,
    check_culprit_by_hand,
    check_culprit_finder,
    culprit_model,
)
from graphleaf_edu.exercises.ema import check_ema_update
from graphleaf_edu.exercises.feedback import CORRECT, NOT_YET, TRY_AGAIN, Feedback
from graphleaf_edu.exercises.leaf_flags import (
    LEAF_QUESTIONS,
    LEAF_QUIZ_NAMES,
    LEAVES_LESSON,
    check_leaf_flags,
    leaf_flags,
    leaf_quiz_code,
    leaf_quiz_tensors,
)
from graphleaf_edu.exercises.spawn_dataset import check_spawn_dataset
from graphleaf_edu.exercises.student_copies import student_copy, write_student_copies

__all__ = [
    "COPY_QUESTIONS",
    "COPY_QUESTION_NAMES",
    "CORRECT",
    "LEAF_QUESTIONS",
    "LEAF_QUIZ_NAMES",
    "LEAVES_LESSON",
    "NOT_YET",
    "TAGGER_VARIANTS",
    "TRY_AGAIN",
    "CachingNetAsGiven",
    "Encoder",
    "Feedback",
    "Tagger",
    "check_cache_fix",
    "check_copy_cut",
    "check_copy_predictions",
    "check_culprit_by_hand",
    "check_culprit_finder",
    "check_ema_update",
    "check_leaf_flags",
    "check_spawn_dataset",
    "copy_copy_facts",
    "culprit_model",
    "draw_copy_cut",
    "leaf_flags",
    "leaf_quiz_code",
    "leaf_quiz_tensors",
    "student_copy",
    "write_student_copies",
]
