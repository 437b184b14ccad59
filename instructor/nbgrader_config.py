"""nbgrader's configuration for a graphleaf-edu course: copy it into the course folder (docs/instructors.md).

    mkdir -p course/source/exercises && cp instructor/exercises/*.ipynb course/source/exercises/
    cp instructor/nbgrader_config.py course/ && cd course && nbgrader generate_assignment exercises

The Chinese exercises are a second assignment of the same course, exercises-zh-CN, from instructor/exercises/zh-CN/.
"""
c = get_config()  # noqa: F821 -- provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "graphleaf-edu"

# Autograde and Validate run every cell with this limit (nbgrader's default is 30 s). Sized from the
# checks measured under a class's load (`make grading-bench`: bench/grading.json, docs/instructors.md):
# the slowest check cell is ex4's, which starts two spawn DataLoader workers: 2-3 s alone, 18 s with 10
# students at once on 2 cores, about 1.5-1.8 s more per student; 30 at once would need about 50 s.
c.Execute.timeout = 120

# ex4's %%writefile cell writes rows_dataset.py beside the notebook when the solution copy runs: never
# release that file (it holds the solution). Submissions write their own when autograde runs them.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "rows_dataset.py"]
