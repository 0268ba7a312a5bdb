"""The pinned source packages of the code dataset, and the files sampled from them."""

from __future__ import annotations

import random
import re
import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evaluation_data.pinned_packages import Pin


@dataclass(frozen=True, slots=True)
class Source:
    """One pinned package and which of its files are sampled.

    ``root`` is the folder (inside the unpacked package, or inside ``inner``, an
    archive the package ships) that document paths are relative to; ``include``
    are the sub-folders of ``root`` that are sampled.
    """

    language: str
    registry: str  # "deb" or "npm"
    package: str
    version: str
    sha256: str
    licence: str
    root: str
    include: tuple[str, ...] = ("",)
    inner: str = ""

    @property
    def name(self) -> str:
        """The folder name under ``documents/<language>/``."""
        return self.package.lstrip("@").replace("/", "-")

    @property
    def pin(self) -> Pin:
        return Pin(self.registry, self.package, self.version, self.sha256)


_CARGO = "usr/share/cargo/registry"
_GOCODE = "usr/share/gocode/src/github.com"
_GEMS = "usr/share/rubygems-integration/all/gems"
_PHP = "usr/share/php"
# Every input, pinned: the archive's exact version and SHA-256. A rebuild that
# cannot get those bytes stops instead of silently using others. Debian versions
# are those of the bookworm point release (the security archive keeps only its
# newest build); licences are as each package's copyright file or package.json says.
# fmt: off
SOURCES: tuple[Source, ...] = (
    # Rust crate sources, as Debian ships them for its own Rust builds.
    Source("rust", "deb", "librust-semver-dev", "1.0.14-1",
           "bf3719b7aac4b7f16f0d68a7037306dbc1532758fe7a5dea01254e85cecaca8c",
           "MIT or Apache-2.0", f"{_CARGO}/semver-1.0.14", ("src/",)),
    Source("rust", "deb", "librust-itertools-dev", "0.10.3-1",
           "3e13fc328508275c2c84270133f41a300ffb58b9b77001b89373ba7f7ab57fde",
           "MIT or Apache-2.0", f"{_CARGO}/itertools-0.10.3", ("src/",)),
    Source("rust", "deb", "librust-bytes-dev", "1.2.1-1",
           "86fbba5fe9d10f1eeb28944e52cfc8caa75f9a509c3603b70f8107f151744fcc",
           "MIT", f"{_CARGO}/bytes-1.2.1", ("src/",)),
    Source("rust", "deb", "librust-indexmap-dev", "1.9.2-1",
           "691b9efb8df4abdfdb238713c1f66416f31e2c2a33fd15687aae2c4dcb9b5308",
           "Apache-2.0 or MIT", f"{_CARGO}/indexmap-1.9.2", ("src/",)),
    Source("rust", "deb", "librust-anyhow-dev", "1.0.69-1",
           "f877f024d95d8af3c3f62e2cf74e6ba5eb976a3cf27c920bda786cd32029b79d",
           "MIT or Apache-2.0", f"{_CARGO}/anyhow-1.0.69", ("src/",)),
    # Go modules, as Debian ships them under /usr/share/gocode.
    Source("go", "deb", "golang-github-spf13-cobra-dev", "1.6.1-1",
           "4f5d20855133319beef3c5b49d3c21a0406f270bf94fb4b6f4d406b691283cb2",
           "Apache-2.0", f"{_GOCODE}/spf13/cobra"),
    Source("go", "deb", "golang-github-pkg-errors-dev", "0.9.1-2",
           "87227544904795f81d8c660b7854045a1ef78d5c690993bb4a0c43e05104ca64",
           "BSD-2-clause", f"{_GOCODE}/pkg/errors"),
    Source("go", "deb", "golang-github-sirupsen-logrus-dev", "1.9.0-1",
           "51fb87b05452e96be38b97c03d5f997f6ce3a144421f911338d6c4ea2e8aa118",
           "Expat (MIT)", f"{_GOCODE}/sirupsen/logrus"),
    Source("go", "deb", "golang-github-google-go-cmp-dev", "0.5.9-1",
           "b68bd919daa7c1bdf02abfb68894e29e532f19b03b68c8615f50626c48f553b6",
           "BSD-3-clause", f"{_GOCODE}/google/go-cmp"),
    # Python: the standard library of Debian 12's Python 3.11.
    Source("python", "deb", "libpython3.11-stdlib", "3.11.2-6+deb12u8",
           "890b3540dad8a1ccc0deeca025db735bcc82629a76adacbe3b50fcc06ed528ca",
           "PSF-2.0", "usr/lib/python3.11"),
    # Java: the JDK's own sources (lib/src.zip), a few java.base packages.
    Source("java", "deb", "openjdk-17-source", "17.0.19+10-1~deb12u2",
           "2591b37131025f872f057be99467b45f7fa2aed928c8d779208db9c3239e1190",
           "GPL-2 with the Classpath exception", "",
           ("java.base/java/util/", "java.base/java/io/", "java.base/java/time/",
            "java.base/java/nio/file/", "java.net.http/java/net/http/"),
           inner="usr/lib/jvm/openjdk-17/lib/src.zip"),
    # JavaScript: npm packages published as their (JSDoc-commented) sources.
    Source("javascript", "npm", "axios", "1.7.9",
           "634e3ed585d7c8857f00cb7556f79422614e8defd008f8bb34b6018c1faefa0f",
           "MIT", "package", ("lib/",)),
    Source("javascript", "npm", "express", "4.21.2",
           "fc43a91e7dc7affb53c6ad7123a4f35485ed3c45226ae7a3847b7738e783e008",
           "MIT", "package", ("lib/",)),
    Source("javascript", "npm", "ramda", "0.30.1",
           "76a1e5c64d5e46c58067f90fb556f7e803bcc741228312ce8bb88035a2157d9a",
           "MIT", "package", ("src/",)),
    # TypeScript: npm packages whose tarball carries the .ts sources, not only .d.ts.
    Source("typescript", "npm", "rxjs", "7.8.1",
           "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149",
           "Apache-2.0", "package", ("src/internal/",)),
    Source("typescript", "npm", "@trpc/server", "10.45.2",
           "7b861ef0a4410e1f988645c29a7680be8c860b459136716e3b91941c0fd1783e",
           "MIT", "package", ("src/",)),
    Source("typescript", "npm", "immer", "10.1.1",
           "946cc79684ad1e080b09d4f2da14247b272aa667f3aaa100f35846148689f08f",
           "MIT", "package", ("src/",)),
    # C: Open vSwitch's library (lib/), from the source tarball Debian ships.
    Source("c", "deb", "openvswitch-source", "3.1.0-2+deb12u1",
           "da7b7d8765447e7359a80b77caf1edc51a465bd7b34c487331d85fdbc0213502",
           "Apache-2.0", "openvswitch", ("lib/",),
           inner="usr/src/openvswitch/openvswitch.tar.gz"),
    # C++: googletest's sources, nlohmann/json's split headers, Abseil's headers.
    Source("cpp", "deb", "googletest", "1.12.1-0.2",
           "927be72067517da503b6538026d451455c9e860f5dbfe237f792543db7d5a928",
           "BSD-3-clause", "usr/src/googletest",
           ("googletest/src/", "googletest/include/", "googlemock/src/",
            "googlemock/include/")),
    Source("cpp", "deb", "nlohmann-json3-dev", "3.11.2-2",
           "ec57940def6b6186c30be0e0ee81d1e58f86d11a54a145b28686a1e3e4aae801",
           "Expat (MIT)", "usr/include/nlohmann"),
    Source("cpp", "deb", "libabsl-dev", "20220623.1-1+deb12u2",
           "24cdc091cd8e88754401f9d18e3be3d354ef96c453934ff138106fcb0245958b",
           "Apache-2.0", "usr/include/absl"),
    # Ruby: gems as Debian ships them.
    Source("ruby", "deb", "ruby-rack", "2.2.22-0+deb12u1",
           "18bab2c3caffa2b1a35cd73d49652d749909e87fd2d5b57dd4a594a02a6ad157",
           "Expat (MIT)", f"{_GEMS}/rack-2.2.22", ("lib/",)),
    Source("ruby", "deb", "ruby-thor", "1.2.1-2",
           "509715d16039ee7336531718e2497d0f81ae125b9ee53f321dd909c2f03fd2e1",
           "Expat (MIT)", f"{_GEMS}/thor-1.2.1", ("lib/",)),
    # PHP: libraries as Debian ships them under /usr/share/php.
    Source("php", "deb", "php-monolog", "2.9.1-1",
           "f8a26688b521e33cf6ef73b75ae5eac0cb026d986a336161456dd37dbb710681",
           "Expat (MIT)", f"{_PHP}/Monolog"),
    Source("php", "deb", "php-guzzlehttp-psr7", "2.4.5-1+deb12u1",
           "62a536ac1e6f7fc47e6f36562e0049da3023b3adeac1be114c9fda2fbc08eb52",
           "Expat (MIT)", f"{_PHP}/GuzzleHttp/Psr7"),
    Source("php", "deb", "php-symfony-console", "5.4.53+dfsg-0+deb12u1",
           "64bd4cbdd9556ee3fd212e444a8df4aa0af00e09c81abb8634eff819a7bab62b",
           "Expat (MIT)", f"{_PHP}/Symfony/Component/Console"),
    # Shell: dracut's bash libraries and module scripts.
    Source("shell", "deb", "dracut-core", "059-4",
           "d0598a5f7b5dcdd1172303a9da4c156a2b6df75fd85a97bc3d228bfafa5f39f9",
           "GPL-2+", "usr/lib/dracut"),
    Source("shell", "deb", "sharness", "1.0.0-1.1",
           "22b6e766cae4b348efda9a7769d729a55af45c861fa0ed47a6135242b7c35023",
           "GPL-2+", "usr/share/sharness"),
    Source("shell", "deb", "virtualenvwrapper", "4.8.4-4",
           "5e21ec8986b63303ff7ba234f35145151486f00be7fb1dae1ed89c8db4e01054",
           "ISC", "usr/share/virtualenvwrapper"),
)
# fmt: on
LANGUAGE_ORDER = (
    "rust",
    "go",
    "python",
    "java",
    "javascript",
    "typescript",
    "c",
    "cpp",
    "ruby",
    "php",
    "shell",
)
EXTENSIONS = {
    "rust": (".rs",),
    "go": (".go",),
    "python": (".py",),
    "java": (".java",),
    "javascript": (".js", ".mjs", ".cjs"),
    "typescript": (".ts",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".hpp", ".h"),
    "ruby": (".rb",),
    "php": (".php",),
    "shell": (".sh",),
}
# Folders that hold tests, examples, benchmarks, vendored or generated code, or
# (for Python) tools rather than library code.
EXCLUDED_PARTS = frozenset(
    {"tests", "testing", "testdata", "__tests__", "spec", "specs", "example", "examples"}
    | {"sample", "samples", "benches", "bench", "fixtures", "vendor", "third_party"}
    | {"thirdparty", "generated", "__pycache__", "idlelib", "lib2to3", "turtledemo"}
    | {"ensurepip", "pydoc_data", "encodings", "site-packages", "dist-packages", "tkinter"}
    | {"msilib", "internal_test", "ci"}
)
_TEST_FILE = re.compile(
    r"(^test_|^tests?\.\w+$|_test\.|_unittest\.|Tests?\.java$|\.test\.|\.spec\.|\.min\.js$"
    r"|\.d\.ts$|^(package|module)-info\.java$)",
    re.I,
)
MIN_FILE_BYTES = 1_000


# ---------------------------------------------------------------- fetching


def excluded(relative: str, language: str) -> bool:
    """Whether a path (below the source root) is a test, example, vendored or tool file."""
    parts = PurePosixPath(relative).parts
    folders = [part.lower() for part in parts[:-1]]
    if any(part in EXCLUDED_PARTS or part.startswith(("test", "config-")) for part in folders):
        return True
    return bool(_TEST_FILE.search(parts[-1])) or not parts[-1].endswith(EXTENSIONS[language])


def source_files(source: Source, tree: Path, max_bytes: int) -> dict[str, bytes]:
    """The candidate files of one source: path below its root -> bytes."""
    found: dict[str, bytes] = {}

    def keep(relative: str, size: int) -> bool:
        return (
            relative.startswith(source.include)
            and MIN_FILE_BYTES <= size <= max_bytes
            and not excluded(relative, source.language)
        )

    if source.inner:
        inner = tree / source.inner
        prefix = f"{source.root}/" if source.root else ""
        if inner.name.endswith(".zip"):
            with zipfile.ZipFile(inner) as zipped:
                for info in zipped.infolist():
                    relative = info.filename.removeprefix(prefix)
                    if info.filename.startswith(prefix) and keep(relative, info.file_size):
                        found[relative] = zipped.read(info)
        else:
            with tarfile.open(inner) as tarred:
                for member in tarred.getmembers():
                    relative = member.name.removeprefix(prefix)
                    if member.isfile() and member.name.startswith(prefix):
                        if keep(relative, member.size):
                            handle = tarred.extractfile(member)
                            assert handle is not None
                            found[relative] = handle.read()
        return dict(sorted(found.items()))
    root = tree / source.root
    if not root.is_dir():
        raise SystemExit(f"error: {source.package} {source.version} has no folder {source.root}")
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and keep(relative, path.stat().st_size):
            found[relative] = path.read_bytes()
    return found


def sample_files(
    candidates: Sequence[tuple[Source, Sequence[str]]], limit: int, seed: int
) -> list[tuple[Source, str]]:
    """A seeded sample of one language's files, taken in turn from each of its packages."""
    queues = []
    for source, paths in candidates:
        shuffled = sorted(paths)
        random.Random(f"{seed}:{source.package}").shuffle(shuffled)
        queues.append([(source, path) for path in shuffled])
    taken: list[tuple[Source, str]] = []
    while len(taken) < limit and any(queues):
        for queue in queues:
            if queue and len(taken) < limit:
                taken.append(queue.pop(0))
    return sorted(taken, key=lambda item: (item[0].name, item[1]))
