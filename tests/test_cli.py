"""The command line: what it accepts, what it writes, and that it exits 0 whatever the student scored."""
import json

from conftest import ROOT, by_step, run_grader


def test_missing_steps_score_zero_with_the_expected_file_named(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "04_softmax.py").write_text((ROOT / "samples/lesson/04_softmax.py").read_text())
    code, out, results = run_grader(sub, tmp_path)
    assert code == 0, out
    steps = by_step(results)
    assert all(t["status"] == "passed" for t in steps["04_softmax"])
    for t in steps["01_projection"]:
        assert t["score"] == 0
        assert "expected 01_projection.ipynb or 01_projection.py" in t["output"]
    assert results["score"] == 10
    assert results["extra_data"]["steps"]["01_projection"]["file"] is None


def test_a_single_step_file_is_graded_alone(tmp_path):
    code, out, results = run_grader(ROOT / "samples/lesson/04_softmax.py", tmp_path)
    assert code == 0, out
    assert set(by_step(results)) == {"04_softmax"}
    assert results["score"] == results["extra_data"]["max_score"] == 10


def test_step_files_are_found_in_subfolders_and_notebooks_preferred(tmp_path):
    sub = tmp_path / "student" / "self_attention"
    sub.mkdir(parents=True)
    (sub / "04_softmax.py").write_text("def softmax(x, axis=-1):\n    return x\n")
    (sub / "04_softmax.ipynb").write_text((ROOT / "source/self_attention/04_softmax.ipynb").read_text())
    code, out, results = run_grader(tmp_path / "student", tmp_path, "--steps", "04_softmax")
    assert code == 0, out
    assert results["extra_data"]["steps"]["04_softmax"]["file"] == "04_softmax.ipynb"
    assert results["score"] == 10


def test_nonexistent_submission_is_a_usage_error(tmp_path):
    code, out, results = run_grader(tmp_path / "nope", tmp_path)
    assert code == 2 and "does not exist" in out and results is None


def test_results_file_is_plain_json_and_table_is_printed(tmp_path):
    code, out, _ = run_grader(ROOT / "samples/lesson", tmp_path)
    assert code == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["output"].startswith("Total ")
    for line in ("step  file", "07_full_module.py", "total"):
        assert line in out
