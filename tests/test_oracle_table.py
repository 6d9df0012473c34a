"""scripts/oracle_table.py on a generated data set standing in for the shared ones."""
import json

from segstruct.datasets import make_synthetic_voc

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400"]


def test_table_and_reports(load_script, tmp_path, capsys):
    root = make_synthetic_voc(tmp_path / "voc", n_train=4, n_val=6)
    shared = tmp_path / "shared"
    shared.mkdir()
    for name in ("camvid_voc", "weizmann_horse_voc"):    # the names the script reads
        (shared / name).symlink_to(root, target_is_directory=True)
    script = load_script("oracle_table")
    out = tmp_path / "inspect"
    assert script.main(["--shared", str(shared), "--out", str(out), "-j", "1", "--",
                        "--cache", str(tmp_path / "cache"), "--split", "val", *SMALL]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| data set | class | val images |")
    rows = [line for line in lines[2:] if line.startswith("|")]
    assert [r.split(" | ")[:2] for r in rows] == [["| camvid_voc", "car"],
                                                  ["| camvid_voc", "person"],
                                                  ["| weizmann_horse_voc", "horse"]]
    report = json.loads((out / "camvid_voc.json").read_text())
    assert set(report["splits"]) == {"val"} and set(report["splits"]["val"]) == {"car", "person"}
    car = report["splits"]["val"]["car"]
    assert rows[0].endswith(f"| {car['oracle_voc_iou_percent']:.2f} |")
    assert "code_version" in report and "superpixels" in report["features"]
