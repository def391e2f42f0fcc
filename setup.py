"""The packages, found under the three source roots (pyproject.toml maps them: spatial_tasks/, tasks/ ->
spatial_tasks.tasks, generators/ -> spatial_tasks.generators). Every folder whose path is a valid
package name is one -- data-only folders included, as setuptools expects for their files; folders
such as sample/kb-0cue/ are their parent's data (package-data "*/*.parquet"). A benchmark's new
folders are found here: nothing to list by hand. tests/test_packaging.py builds the wheel."""

from setuptools import find_namespace_packages, setup

ROOTS = {"spatial_tasks": "spatial_tasks", "tasks": "spatial_tasks.tasks", "generators": "spatial_tasks.generators"}


def packages() -> list[str]:
    found = []
    for folder, prefix in ROOTS.items():
        for sub in ["", *find_namespace_packages(where=folder)]:
            name = f"{prefix}.{sub}" if sub else prefix
            if "__pycache__" not in name and all(part.isidentifier() for part in name.split(".")):
                found.append(name)
    return sorted(found)


setup(packages=packages())
