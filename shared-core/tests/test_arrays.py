import numpy as np
import pytest

from shared_core.data import read_array, read_image_folder, write_arrays


def test_npz_key_and_rank(data_dir, tmp_path):
    path = data_dir / "arrays.npz"
    assert read_array(path, "x", ndim=2).shape == (3, 4)
    with pytest.raises(
        ValueError, match=r"arrays\.npz\['y'\]: expected an array of rank 2, got shape \(3,\)"
    ):
        read_array(path, "y", ndim=2)
    with pytest.raises(ValueError, match=r"holds the arrays \['x', 'y'\]; expected key="):
        read_array(path)
    with pytest.raises(ValueError, match="has no array 'z'"):
        read_array(path, "z")
    one = write_arrays(tmp_path / "one.npz", {"only": np.eye(2)})
    np.testing.assert_array_equal(read_array(one), np.eye(2))
    npy = write_arrays(tmp_path / "a.npy", np.arange(4))
    np.testing.assert_array_equal(read_array(npy, ndim=1), np.arange(4))
    empty = tmp_path / "e.npy"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"e\.npy is empty"):
        read_array(empty)
    truncated = tmp_path / "t.npy"
    truncated.write_bytes((tmp_path / "a.npy").read_bytes()[:60])
    with pytest.raises(ValueError, match=r"t\.npy is not a readable \.npy file"):
        read_array(truncated)


def test_image_folder_classes_as_labels(data_dir):
    pytest.importorskip("PIL")
    folder = read_image_folder(data_dir / "images")
    assert folder.classes == ["circle", "square"]
    assert folder.images.shape == (4, 6, 6, 3) and folder.images.dtype == np.uint8
    np.testing.assert_array_equal(folder.labels, [0, 0, 1, 1])
    assert folder.images[0, 0, 0].tolist() == [55, 55, 55] and folder.images[2, 1, 1, 0] == 50
    grey = read_image_folder(data_dir / "images", mode="L", size=(3, 3))
    assert grey.images.shape == (4, 3, 3)


def test_image_folder_sizes_and_bad_files(data_dir, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        Image.new("RGB", (4, 4)).save(tmp_path / cls / "0.png")
    Image.new("RGB", (5, 4)).save(tmp_path / "b" / "1.png")
    with pytest.raises(ValueError, match=r"1\.png is 5x4 but .*0\.png is 4x4; expected one size"):
        read_image_folder(tmp_path)
    assert read_image_folder(tmp_path, size=(4, 4)).images.shape == (3, 4, 4, 3)
    (tmp_path / "b" / "2.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"record 4: .*2\.png: Pillow could not read it"):
        read_image_folder(tmp_path, size=(4, 4))
    folder = read_image_folder(tmp_path, size=(4, 4), skip_invalid=True)
    assert len(folder) == 3 and folder.n_skipped == 1
    with pytest.raises(ValueError, match="mode"):
        read_image_folder(tmp_path, mode="CMYK")
