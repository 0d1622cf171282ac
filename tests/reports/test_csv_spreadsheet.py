"""The gradebook opens right in a spreadsheet, for names in any script (issue 29).

Excel opens a .csv by double-click in the ANSI code page (cp1252 in the West) unless the file
starts with UTF-8's byte order mark; LibreOffice Calc and Google Sheets take the mark too and
drop it. So the gradebook starts with the mark, and this test reads it back the way Excel does:
sniff the mark, else decode as cp1252."""
import csv
import io

from autograder import contract
from autograder.commands import batch

NAMES = ["张伟", "Müller", "Ngozi Ọkọnkwọ", "مريم", "Дмитрий", "=cmd()", "plain"]


def excel_decode(data: bytes) -> str:
    """Text as Excel's double-click open reads a .csv: UTF-8 (mark dropped) when it starts with
    the mark, else the ANSI code page."""
    bom = "\ufeff".encode("utf-8")
    if data.startswith(bom):
        return data[len(bom):].decode("utf-8")
    return data.decode("cp1252", errors="replace")


def results(score, error=""):
    steps = {s: {"score": score} for s in contract.REGISTRY[contract.DEFAULT_ASSIGNMENT].stems}
    extra = {"steps": steps, "max_score": 70}
    if error:
        extra["error"] = error
    return {"score": score * len(steps), "extra_data": extra}


def test_names_in_any_script_read_back_as_excel_reads_them(tmp_path):
    path = tmp_path / "grades.csv"
    batch.write_csv(path, {name: results(10) for name in NAMES})
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\xef\xbb\xbf") == 1
    rows = list(csv.DictReader(io.StringIO(excel_decode(data))))
    assert [r["student"] for r in rows] == [n if not n.startswith("=") else "'" + n for n in NAMES]
    assert list(rows[0])[0] == "student"            # the mark is not part of the first header
    assert all(r["total"] == "70" for r in rows)


def test_pythons_and_sheets_readers_drop_the_mark(tmp_path):
    """utf-8-sig (Python, pandas' encoding="utf-8-sig", Google Sheets' import) reads the same."""
    path = tmp_path / "grades.csv"
    batch.write_csv(path, {"张伟": results(0, error="could not be read")})
    with open(path, encoding="utf-8-sig", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["student"] == "张伟" and row["error"] == "could not be read"
