"""`nbgrader autograde` as safe as `grade`: the student's notebook runs in a walled kernel, and
the number nbgrader records for each hidden-test cell comes from the trusted side.

nbgrader_config.py puts two preprocessors where nbgrader's Execute was:

- `WalledExecute`: nbgrader's Execute (same settings: c.Execute.timeout and the rest), whose
  kernel `WalledKernelManager` starts walled off like the kit's child processes
  (isolation.make_plan / apply): no view of the course folder (source/, solutions/, the
  gradebook, release/, other students), no network, a uid of its own, the kit's limits. It talks
  to nbgrader over unix sockets in a folder shared into its view (`shared=`), nothing else. The
  hidden-test cells (`grade_step("<stem>")`) are not run in that kernel at all.
- `TrustedGrades`: grades the notebook as it was before the kernel ran (the student's cells as
  submitted, nbgrader's locked and hidden cells restored from the gradebook) with the kit's own
  grader, in nbgrader's process (the student's code runs in the kit's isolated children, as
  for `grade`), and writes each hidden-test cell's outputs: the grader's messages on stdout and
  the points as the cell's value, exactly as `notebook.grade_step` shows them. SaveAutoGrades,
  which runs after it, records that number: nothing the kernel printed or returned can change it.

Where the machine allows no isolation (not root and no user namespaces: isolation.choose_mode()
gives "process"), the kernel is a separate process in a scratch folder of its own, with the
limits, and nbgrader's log says it can read what the instructor's account can. The scores are
trusted at every level.
"""
import ast
import asyncio
import atexit
import copy
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid

import nbformat
from jupyter_client.manager import AsyncKernelManager, KernelManager
from jupyter_client.provisioning import LocalProvisioner
from nbclient.exceptions import DeadKernelError
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Float, HasTraits, Integer, Unicode

from autograder import contract, i18n
from autograder.i18n import _
from autograder.sandbox import isolation, process
from autograder.sandbox.limits import Limits

SKIP_TAG = "skip-execution"        # nbclient's tag for a cell it must not run
# The kernel's command: ipykernel, dying with the process that started it. Inside a PID namespace
# that is the process waiting outside it (isolation.apply), which dies with nbgrader in turn:
# a kernel's first process sees no parent, so ipykernel's own watch for it cannot work there.
LAUNCHER = ("import ctypes, runpy, signal, sys\n"
            f"ctypes.CDLL(None).prctl({isolation.PR_SET_PDEATHSIG}, signal.SIGKILL)\n"
            "sys.argv[0] = 'ipykernel_launcher'\n"
            "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)\n")
RESOURCE_KEY = "attention_kit"     # resources[RESOURCE_KEY]["as_submitted"]: the notebook before the kernel ran
DATA_FILE_BYTES = 64 << 20         # files beside the notebook copied into the kernel's folder, in all
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
MS_NOSUID, MS_NODEV, MS_NOEXEC, MNT_DETACH = 2, 4, 8, 2


# ------------------------------------------------------------------ the student's originals
def submitted_original(preprocessor, resources):
    """The student's folder under submitted/ as nbgrader found it, or None when unknown.

    nbgrader copies submitted/<student>/<assignment>/ into autograded/ with shutil.copytree,
    which copies what a link points to: a notebook that is a link to the course's master, or a
    "data file" that is a link to solutions/, arrives there as a regular file holding the course's
    content. So the kit looks at the originals, with lstat, and takes nothing that is not a
    regular file in a real folder (submitted_files)."""
    coursedir, owner = None, getattr(preprocessor, "parent", None)
    while owner is not None and coursedir is None:       # the exporter, then nbgrader's converter
        coursedir, owner = getattr(owner, "coursedir", None), getattr(owner, "parent", None)
    info = resources.get("nbgrader") or {}
    if coursedir is None or "student" not in info or "assignment" not in info:
        return None
    return coursedir.format_path(coursedir.submitted_directory, info["student"], info["assignment"])


def master_folder(preprocessor, resources):
    """The assignment's folder under the course's source/ (the instructor's: its files beside the
    master notebooks are the data the notebooks read, the decoder's data/corpus.txt), or None."""
    coursedir, owner = None, getattr(preprocessor, "parent", None)
    while owner is not None and coursedir is None:
        coursedir, owner = getattr(owner, "coursedir", None), getattr(owner, "parent", None)
    info = resources.get("nbgrader") or {}
    if coursedir is None or "assignment" not in info:
        return None
    return coursedir.format_path(coursedir.source_directory, ".", info["assignment"])


def refused_original(folder, name):
    """Why the submitted notebook `name` (or a folder above it) cannot be taken as the student's
    own file, in the student's words; None when it is a regular file in real folders."""
    import stat
    from autograder import submitted_files
    if folder is None:
        return None
    path = os.path.join(folder, name)
    parts = [os.path.dirname(os.path.dirname(folder)), os.path.dirname(folder), folder]
    for part in parts[1:]:
        try:
            mode = os.lstat(part).st_mode
        except OSError:
            return None
        if not stat.S_ISDIR(mode):
            return submitted_files.refusal(os.path.basename(part), mode)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else submitted_files.refusal(name, mode)


# ------------------------------------------------------------------ the hidden-test cells
def hidden_stem(cell):
    """The step a hidden-test cell grades, when the cell is the kit's: an nbgrader grade cell (not
    a solution) whose code is imports and then `grade_step("<stem>")` for a step of the contract.
    None for every other cell (those nbgrader handles as it always does)."""
    meta = (cell.get("metadata") or {}).get("nbgrader") or {}
    if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
        return None
    try:
        tree = ast.parse(cell.get("source") or "")
    except (SyntaxError, ValueError):
        return None
    if not tree.body or not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body[:-1]):
        return None
    last = tree.body[-1]
    call = last.value if isinstance(last, ast.Expr) else None
    if not (isinstance(call, ast.Call) and not call.keywords and len(call.args) == 1
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
            and (getattr(call.func, "id", None) == "grade_step" or getattr(call.func, "attr", None) == "grade_step")):
        return None
    return call.args[0].value if contract.step_for_stem(call.args[0].value) else None


def warm_children(frameworks):
    """Start the kit's zygotes of `frameworks` in nbgrader's process, each once (sandbox/zygote.py,
    as `grade` does): the step children TrustedGrades starts and the walled kernels then fork from a
    Python that imported numpy (and torch) already, instead of importing torch for every notebook
    (about 2 s a notebook, 0.2 s warm). Asked for the framework of each notebook's step as it
    comes (WalledExecute, TrustedGrades): a course whose notebooks are numpy steps only starts no
    torch zygote (some 1.5 s of CPU). They warm up while the first student kernel runs; they exit
    when nbgrader does (stopped at exit, or their control socket closing when it is killed).
    ATTENTION_KIT_WARM=0 (or an NVIDIA GPU) keeps a fresh child per step."""
    from autograder.sandbox import zygote
    wanted = tuple(f for f in zygote.FRAMEWORKS if f in frameworks and f not in _warm_started)
    if not wanted:
        return
    if not _warm_started:
        atexit.register(zygote.stop)        # once; with no zygote running (warm starts off) it does nothing
    _warm_started.update(wanted)
    zygote.start_unless_disabled(wanted)


_warm_started = set()       # the frameworks whose zygotes were asked for


def _notebook_step(nb):
    stem = ((nb.get("metadata") or {}).get("attention_kit") or {}).get("stem")
    return contract.step_for_stem(stem) if isinstance(stem, str) else None


class TrustedGrades(NbGraderPreprocessor):
    """Write each kit hidden-test cell's outputs from the kit's grader, run here (see the module
    docstring). Placed after the Execute preprocessor and before SaveAutoGrades."""

    def preprocess(self, nb, resources):
        cells = [(cell, stem) for cell in nb.cells if (stem := hidden_stem(cell))]
        if not cells:
            return nb, resources
        warm_children({contract.step_for_stem(stem).framework for _cell, stem in cells})
        from autograder.commands import notebook_hook as notebook  # the grader (pytest, the suites): only when there is something to grade
        name = resources["nbgrader"]["notebook"]
        folder = (resources.get("metadata") or {}).get("path") or "."
        original = submitted_original(self, resources)
        refused = refused_original(original, f"{name}.ipynb")
        if original is not None and os.path.isdir(original):
            folder = original            # other steps' files: the student's own, read as data
        language_folder = self._course_root() or os.path.dirname(os.path.abspath(folder))
        submitted = copy.deepcopy((resources.get(RESOURCE_KEY) or {}).get("as_submitted") or nb)
        for cell in submitted.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        with tempfile.TemporaryDirectory(prefix="attention-kit-trusted-") as tmp:
            nbformat.write(submitted, os.path.join(tmp, f"{name}.ipynb"))
            for cell, stem in cells:
                if refused is not None:          # a link to the course's master, a FIFO...: nothing to grade
                    text = i18n.render(refused, notebook.course_language(language_folder))   # a message: the cell holds text
                    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n"),
                                    nbformat.v4.new_output("execute_result", data={"text/plain": "0.0"},
                                                           execution_count=cell.get("execution_count"))]
                    continue
                # this notebook: as submitted; another step's file: the student's own beside it
                points, text, diagnostics = notebook.step_outcome(stem, tmp if stem == name else folder,
                                                                  language_folder=language_folder)
                if diagnostics:
                    self.log.warning("attention-kit: the grader's diagnostics for %s in %s:\n%s", stem, name,
                                     diagnostics)
                cell.outputs = [
                    nbformat.v4.new_output("stream", name="stdout", text=text + "\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)},
                                           execution_count=cell.get("execution_count")),
                ]
        return nb, resources

    def _course_root(self):
        """nbgrader's course folder (the converter's), where the course's nbgrader_config.py is."""
        converter = getattr(self.parent, "parent", None)
        coursedir = getattr(converter, "coursedir", None)
        return getattr(coursedir, "root", None)


# ------------------------------------------------------------------ the walled kernel
def output_bytes(msg):
    """The bytes an output message adds to the notebook: the output it becomes, as JSON (its
    content, for a message that makes none)."""
    import json
    try:
        return len(json.dumps(nbformat.v4.output_from_msg(msg), default=str))
    except (ValueError, KeyError, TypeError):
        return len(json.dumps(msg.get("content") or {}, default=str))


class OutputCap(HasTraits):
    """Caps what a kernel's outputs add to the notebook, in bytes: stream, display data, results and
    errors alike, per cell and per notebook (nbgrader's own LimitOutput counts lines of streams and
    lets display data through: one cell could make a 20 MiB+ notebook). Past a cap, the outputs are
    dropped and the cell shows one note saying so. Mixed into an nbclient NotebookClient (here,
    nbgrader's Execute); the kernel manager caps each message (WalledKernelManager.client)."""

    max_cell_output_bytes = Integer(1 << 20, config=True, help="bytes of outputs one cell may keep")
    max_notebook_output_bytes = Integer(4 << 20, config=True, help="bytes of outputs one notebook may keep")

    def output(self, outs, msg, display_id, cell_index):
        if not hasattr(self, "_output_used"):
            self._output_used, self._output_cut = {}, set()
        if cell_index in self._output_cut:
            # the note said "the rest was not kept": nothing of this cell after it, however the
            # kernel split the cell's writes into messages (a busy machine splits them more)
            return None
        size = output_bytes(msg)
        cell = self._output_used.get(cell_index, 0)
        total = sum(self._output_used.values())
        if cell + size > self.max_cell_output_bytes or total + size > self.max_notebook_output_bytes:
            self._note_cut(outs, cell_index)
            return None
        self._output_used[cell_index] = cell + size
        return super().output(outs, msg, display_id, cell_index)

    def _update_display_id(self, display_id, msg):
        """update_display_data replaces an output in place: no larger than the cell's cap allows."""
        if output_bytes(msg) > self.max_cell_output_bytes:
            return None
        return super()._update_display_id(display_id, msg)

    def _note_cut(self, outs, cell_index):
        if cell_index in self._output_cut:
            return
        self._output_cut.add(cell_index)
        note = _("[attention-kit: the outputs of this cell were cut: a cell may keep {cell} KiB of "
                      "outputs and a notebook {notebook} KiB; the rest was not kept]",
                      cell=self.max_cell_output_bytes >> 10, notebook=self.max_notebook_output_bytes >> 10)
        outs.append(nbformat.v4.new_output("stream", name="stderr",
                                           text=i18n.render(note, self._language()) + "\n"))

    def _language(self):
        try:
            from autograder.commands import notebook_hook as notebook
            root = TrustedGrades._course_root(self) if hasattr(self, "parent") else None
            return notebook.course_language(root or ".")
        except Exception:                       # noqa: BLE001 - a note in English then
            return "en"

    def reset_output_cap(self):
        self._output_used, self._output_cut = {}, set()


class WalledExecute(OutputCap, Execute):
    """nbgrader's Execute with a WalledKernelManager kernel. The kit's hidden-test cells are
    skipped (TrustedGrades writes them); a kernel that dies (an exit, a crash, a limit) ends the
    run with an error in the cell it was running, and the notebook is still graded. The outputs
    are capped in bytes (OutputCap)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", WalledKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        resources = resources if resources is not None else {}
        resources.setdefault(RESOURCE_KEY, {})["as_submitted"] = copy.deepcopy(nb)
        self._original = submitted_original(self, resources)
        self._master = master_folder(self, resources)
        refused = refused_original(self._original, f"{resources.get('nbgrader', {}).get('notebook')}.ipynb")
        if refused:
            # a link (to the master notebook, say): what nbgrader copied is the course's, not the
            # student's. Its code never runs, its solution cells are blanked (the autograded copy
            # becomes the student's feedback), and TrustedGrades gives 0 with the reason.
            self.log.warning("attention-kit: %s", i18n.render(refused, "en"))      # the instructor's log
            from autograder.commands import notebook_hook as notebook
            shown = i18n.render(refused, notebook.course_language(TrustedGrades._course_root(self) or "."))
            for cell in nb.cells:
                if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                    cell.source, cell.outputs = f"# {shown}", []
            return nb, resources
        step = _notebook_step(nb)
        self._framework = step.framework if step else ""
        hidden = {contract.step_for_stem(stem).framework for cell in nb.cells if (stem := hidden_stem(cell))}
        if hidden:
            # TrustedGrades grades this notebook next; its kernel forks from its step's zygote
            warm_children(hidden | ({step.framework} if step else set()))
        tagged = []
        for cell in nb.cells:
            if hidden_stem(cell) and SKIP_TAG not in cell.metadata.get("tags", []):
                had_tags = "tags" in cell.metadata
                cell.metadata.setdefault("tags", []).append(SKIP_TAG)
                tagged.append((cell, had_tags))
        self._running = None
        self.reset_output_cap()
        try:
            return super().preprocess(nb, resources, km)
        except DeadKernelError:
            self.log.warning("attention-kit: the kernel stopped while running cell %s of %s; the cells "
                             "after it did not run", self._running, resources.get("nbgrader", {}).get("notebook"))
            if self._running is not None:
                why = ("The kernel stopped while running this cell (an exit, a crash or a limit); "
                       "the cells after it did not run.")
                nb.cells[self._running].setdefault("outputs", []).append(nbformat.v4.new_output(
                    "error", ename="DeadKernelError", evalue=why, traceback=[f"DeadKernelError: {why}"]))
            return nb, resources
        finally:
            for cell, had_tags in tagged:
                cell.metadata["tags"].remove(SKIP_TAG)
                if not had_tags and not cell.metadata["tags"]:
                    del cell.metadata["tags"]

    def preprocess_cell(self, cell, resources, index):
        self._running = index
        return super().preprocess_cell(cell, resources, index)

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if isinstance(km, WalledKernelManager):
            km.framework = getattr(self, "_framework", "")
            km.data_folder = getattr(self, "_original", None)    # the data files: the student's originals
            km.master_folder = getattr(self, "_master", None)    # and the course's, over them
            km.max_message_bytes = self.max_cell_output_bytes + (1 << 20)
        return km


SOCKET_PATH_MAX = 107          # bytes in a Unix socket's path (sun_path), its terminating NUL left out


KERNEL_TMPFS = ("/tmp", "/dev/shm")   # in the walled kernel's view, its own tmpfs, where Landlock lets it write


def _below(path, folders):
    return any(path == f or path.startswith(f + "/") for f in folders)


def socket_parent():
    """Where the kernel's IPC sockets' folder goes: a folder where the kernel can make sockets and
    nothing else (isolation.apply: Landlock's SOCKETS_ONLY, for every account), so never below
    /tmp or /dev/shm (the kernel's own tmpfs in its view: the rights Landlock gives there would
    reach the bound folder and its host disk too). The temporary folder unless it is below them
    or so long that "<it>/attention-kit-kernel-ipc-XXXXXXXX/kernel-NN" would not fit in a Unix socket
    address (a deep $TMPDIR: zmq then fails with "File name too long" and no kernel starts); else
    /var/tmp; /tmp only where neither is usable (then capped as root only: a warning says so)."""
    def fits(base):
        return len(os.fsencode(base)) + len("/attention-kit-kernel-ipc-XXXXXXXX/kernel-NN") <= SOCKET_PATH_MAX
    for base in (tempfile.gettempdir(), "/var/tmp"):
        if fits(base) and not _below(base, KERNEL_TMPFS) and os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            return base
    return "/tmp"


class WalledProvisioner(LocalProvisioner):
    """The kernel's process as the kit handles a child's: killed with everything it started
    (isolation.kill_everything) before it is reaped, so its pid, kept by the zombie until then,
    always names it. poll() looks without reaping."""

    async def launch_kernel(self, cmd, **kwargs):
        """Forked from the kit's zygote of the notebook's framework when one runs (numpy and torch
        imported once, not once per notebook: about 2 s of CPU a torch notebook), walled off by the
        same isolation.apply; else started by exec, as jupyter_client does."""
        forked = self.parent.forked_kernel(cmd)
        if forked is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process, self.pid = forked, forked.pid
        try:
            self.pgid = os.getpgid(forked.pid)        # its own session, as the exec'd kernel's
        except OSError:
            self.pgid = None
        self.cwd = kwargs.get("cwd")
        return self.connection_info

    async def poll(self):
        if self.process is None:
            return 0
        if self.process.returncode is not None:
            return self.process.returncode
        try:
            info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self.process.poll()
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    async def wait(self):
        if self.process is None:
            return 0
        while await self.poll() is None:
            await asyncio.sleep(0.05)
        return self.reap()

    def reap(self):
        """Kill what is left (the namespace, the uid's processes), then reap the process."""
        if self.process is None:
            return 0
        self.parent.kill_all(self.process.pid)
        ret = self.process.wait()
        self.process = None
        return ret

    async def kill(self, restart=False):
        if self.process is not None:
            self.parent.kill_all(self.process.pid)

    async def terminate(self, restart=False):
        await self.kill(restart)


class WalledKernelManager(AsyncKernelManager):
    """An IPython kernel walled off like the kit's children (isolation.py).

    Its own scratch folder is its cwd and HOME (IPython's and Jupyter's folders inside it), holding
    a copy of the files beside the notebook; it sees nothing else of the machine but what Python
    needs, read-only. The connection file and the ipc sockets lie in a second folder, bound at the
    same path inside its view (`shared`), which nbgrader reaches as root. Interrupts go by message;
    shutting down kills every process the kernel started. The command is always this Python's
    ipykernel, whatever kernel spec the notebook names."""

    isolation = Unicode("auto", config=True, help="isolation level: auto, uid, userns or process (isolation.py)")
    memory_gib = Float(4.0, config=True, help="memory limit of the kernel (GiB)")
    cpu_seconds = Integer(600, config=True, help="CPU seconds of the kernel's process (RLIMIT_CPU)")
    max_processes = Integer(64, config=True, help="processes and threads of the kernel's uid (RLIMIT_NPROC)")
    file_mib = Integer(64, config=True, help="largest file the kernel may write (MiB)")
    disk_mib = Integer(128, config=True, help="all the kernel may write: its folder, /tmp and /dev/shm (MiB)")
    framework = Unicode("", help="the step's framework (set by WalledExecute): torch kernels on a GPU "
                                 "machine go without a PID namespace, where CUDA does not start")
    output_bytes = Integer(16_000, help="the kernel process's own stdout/stderr kept for the log")
    max_message_bytes = Integer(2 << 20, help="the largest message nbgrader takes from the kernel (ZMQ_MAXMSGSIZE): "
                                              "a larger one is dropped unread, its connection reset")
    socket_folder_bytes = Integer(1 << 20, help="the socket folder's tmpfs (as root): all the kernel may write there")

    _plan = None
    _warned_unwalled = False

    # -- start
    async def _async_pre_start_kernel(self, **kw):
        self.kernel_name = "python3"
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        if self.provisioner is None:
            self.provisioner = WalledProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        try:
            self._build_wall(kw.pop("cwd", None))
            cmd, kw = await super()._async_pre_start_kernel(**kw)
            if self._plan.uid is not None:    # its connection file (the session key) and its socket folder
                os.chown(self.connection_file, self._plan.uid, self._plan.uid)
            out_r, self._out_w = os.pipe()
            self._trap = process.OutputTrap(out_r, self.output_bytes)
            self._trap.start()
            plan = self._plan
            kw.update(cwd=plan.scratch, env=self._env(), stdin=subprocess.DEVNULL, stdout=self._out_w,
                      stderr=self._out_w, preexec_fn=lambda: _start_walled(plan))
        except BaseException:
            self._tear_down()
            raise
        return cmd, kw

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        except BaseException:
            self._tear_down()
            raise
        finally:
            if getattr(self, "_out_w", None) is not None:
                os.close(self._out_w)
                self._out_w = None

    def format_kernel_cmd(self, extra_arguments=None):
        return [sys.executable, "-I", "-c", LAUNCHER, "-f", self.connection_file, *(extra_arguments or [])]

    def forked_kernel(self, cmd):
        """The kernel of `cmd` (format_kernel_cmd's) forked from this process's zygote for the
        notebook's framework (sandbox/zygote.py): a ZygoteChild, or None when no zygote runs
        (ATTENTION_KIT_WARM=0, a GPU, a notebook of no step)."""
        from autograder.sandbox import zygote
        if self.framework not in (zygote.current() or {}):
            return None
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            return zygote.spawn(self.framework, self._plan, self._env(), self._plan.scratch, null, self._out_w,
                                self._out_w, kernel=cmd[cmd.index(LAUNCHER) + 1:])
        finally:
            os.close(null)

    def _limits(self):
        limits = Limits(memory_bytes=int(self.memory_gib * 2**30), cpu_seconds=self.cpu_seconds,
                                max_processes=self.max_processes, file_bytes=self.file_mib << 20,
                                isolation=self.isolation)
        if hasattr(limits, "disk_bytes"):
            limits.disk_bytes = self.disk_mib << 20
        return limits

    def _build_wall(self, notebook_dir):
        limits = self._limits()
        mode = isolation.choose_mode(limits.isolation)
        if mode == "process" and not WalledKernelManager._warned_unwalled:
            WalledKernelManager._warned_unwalled = True
            self.log.warning("attention-kit: no isolation on this machine (neither root nor user namespaces): "
                             "the notebooks' kernels run with limits only and can read what this account "
                             "can read. The scores stay the kit's own.")
        self._scratch = tempfile.mkdtemp(prefix="attention-kit-kernel-")
        self._sockets = self._socket_folder()
        # data files from the student's own folder under submitted/ (regular files only), not from
        # nbgrader's copy, whose links were followed
        data_folder = getattr(self, "data_folder", None)
        source = data_folder if data_folder and os.path.isdir(data_folder) else notebook_dir
        if source:
            copy_beside_files(source, self._scratch, limits.file_bytes)
        # then the course's own files beside the masters (source/<assignment>/, subfolders too), the
        # master's version winning, as nbgrader copies them into autograded/: what the released
        # notebooks read (the decoder's data/corpus.txt) is there whether the student handed it in or not
        master = getattr(self, "master_folder", None)
        if master and os.path.isdir(master) and not os.path.islink(master):
            copy_master_files(master, self._scratch, limits.file_bytes)
        pid_ns = not (self.framework != "numpy" and isolation.gpu_present())
        visible = isolation.make_plan("process", self._scratch, limits, shared=[self._sockets]).visible
        cover = paths_to_cover([p for p in (self._course_root(), notebook_dir) if p], visible)
        self._plan = isolation.make_plan(mode, self._scratch, limits, cover, pid_namespace=pid_ns,
                                         shared=[self._sockets])
        isolation.prepare_scratch(self._plan)
        # the kernel's own uid outside (at `uid`, and at `userns` as root: a fresh uid either way)
        # owns the folder and the connection file; an ordinary account's kernel keeps its uid
        if self._plan.uid is not None:
            os.chown(self._sockets, self._plan.uid, self._plan.uid)
        os.chmod(self._sockets, 0o700)
        self.transport = "ipc"
        self.ip = os.path.join(self._sockets, "kernel")
        self.connection_file = os.path.join(self._sockets, "kernel.json")

    def _course_root(self):
        return os.getcwd()        # nbgrader runs in the course folder

    def _env(self):
        scratch = self._plan.scratch
        env = process.child_env(scratch, self._plan)
        env.pop("ATTENTION_KIT_PIDNS", None)
        env.update({"IPYTHONDIR": f"{scratch}/.ipython", "JUPYTER_CONFIG_DIR": f"{scratch}/.jupyter",
                    "JUPYTER_DATA_DIR": f"{scratch}/.local/share/jupyter",
                    "JUPYTER_RUNTIME_DIR": f"{scratch}/.local/share/jupyter/runtime", "JUPYTER_PLATFORM_DIRS": "1",
                    "MPLCONFIGDIR": f"{scratch}/.matplotlib", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
        return env

    def client(self, **kwargs):
        """A client whose sockets refuse any message over max_message_bytes: what nbgrader's process
        holds of one kernel message is bounded, whatever the kernel sends (OutputCap bounds what
        the notebook keeps)."""
        import zmq
        kc = super().client(**kwargs)
        kc.context.setsockopt(zmq.MAXMSGSIZE, int(self.max_message_bytes))
        return kc

    def _socket_folder(self):
        """The folder of the kernel's connection file and ipc sockets, which nbgrader and the kernel
        both reach. The kernel may only make sockets there (Landlock, every account: socket_parent
        keeps it outside the kernel's writable folders); as root also a tmpfs of socket_folder_bytes
        and 64 inodes mounted on it, removed with the kernel (docs/security-grader.md)."""
        folder = tempfile.mkdtemp(prefix="attention-kit-kernel-ipc-", dir=socket_parent())
        self._sockets_mounted = False
        if os.geteuid() == 0:
            options = f"size={int(self.socket_folder_bytes)},nr_inodes=64,mode=700".encode()
            if _libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options) == 0:
                self._sockets_mounted = True
            else:
                self.log.warning("attention-kit: no tmpfs for the kernel's socket folder (%s)",
                                 os.strerror(ctypes.get_errno()))
        if not self._sockets_mounted and _below(os.path.realpath(folder), KERNEL_TMPFS):
            self.log.warning("attention-kit: the kernel's socket folder %s is below /tmp and no tmpfs caps it: "
                             "the kernel can write there (make /var/tmp or $TMPDIR, outside /tmp, writable)", folder)
        return folder

    # -- interrupt and stop
    async def _async_interrupt_kernel(self):
        """By message on the control channel (the kernel signals itself): a signal to the process
        group would reach only the process that waits outside the kernel's PID namespace."""
        if not self.has_kernel:
            raise RuntimeError("Cannot interrupt kernel. No kernel is running!")
        self._connect_control_socket()
        self.session.send(self._control_socket, self.session.msg("interrupt_request", content={}))

    interrupt_kernel = _async_interrupt_kernel

    async def _async_shutdown_kernel(self, now=False, restart=False):
        """Always at once: the kernel keeps nothing worth a clean exit, and everything it started dies."""
        return await KernelManager._async_shutdown_kernel(self, now=True, restart=restart)

    shutdown_kernel = _async_shutdown_kernel

    async def _async_cleanup_resources(self, restart=False):
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if not restart:
                self._tear_down()

    cleanup_resources = _async_cleanup_resources

    def kill_all(self, pid):
        if self._plan is not None:
            isolation.kill_everything(self._plan, pid)

    def _tear_down(self):
        """Kill and reap the kernel with all it started, release its plan, remove both folders."""
        if self.provisioner is not None and getattr(self.provisioner, "process", None) is not None:
            self.provisioner.reap()
        if self._plan is not None:
            isolation.finish(self._plan)
            self._plan = None
        if getattr(self, "_out_w", None) is not None:
            os.close(self._out_w)
            self._out_w = None
        trap = getattr(self, "_trap", None)
        if trap is not None:
            trap.join(timeout=2)
            if trap.kept:
                self.log.debug("attention-kit: the kernel process's own output: %s", ascii(trap.text()[-2000:]))
            self._trap = None
        if getattr(self, "_sockets_mounted", False):
            _libc.umount2(os.fsencode(self._sockets), MNT_DETACH)
            self._sockets_mounted = False
        for folder in (getattr(self, "_scratch", None), getattr(self, "_sockets", None)):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
        self._scratch = self._sockets = None


def _start_walled(plan):
    """preexec_fn: die with nbgrader (the thread that starts the kernel lives as long as it), then
    the wall. A kernel left behind by a killed nbgrader would otherwise stay, idle, for good."""
    _libc.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL)
    isolation.apply(plan)


def copy_beside_files(folder, scratch, file_bytes, total=DATA_FILE_BYTES):
    """The regular files beside the notebook (data it may read), copied into the kernel's
    folder: no notebooks, no links, nothing over the file limit, `total` bytes in all."""
    left = total
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if (entry.name.endswith(".ipynb") or entry.name.startswith(".")
                    or not entry.is_file(follow_symlinks=False)):
                continue
            size = entry.stat(follow_symlinks=False).st_size
            if size > min(file_bytes, left):
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as src, open(os.path.join(scratch, entry.name), "wb") as dst:
                dst.write(src.read(size))
            left -= size
        except OSError:
            continue


def copy_master_files(folder, scratch, file_bytes, total=DATA_FILE_BYTES, depth=4):
    """The course's files beside the master notebooks, copied into the kernel's folder at the same
    relative paths (data/corpus.txt -> <scratch>/data/corpus.txt), over the student's: no notebooks
    (the masters hold the solutions), no links, no hidden entries, `depth` folders deep, nothing over
    the file limit, `total` bytes in all."""
    left = total

    def walk(src, dst, level):
        nonlocal left
        try:
            entries = sorted(os.scandir(src), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            try:
                if entry.name.startswith(".") or entry.name.endswith(".ipynb") or entry.is_symlink():
                    continue
                target = os.path.join(dst, entry.name)
                if entry.is_dir(follow_symlinks=False):
                    if level < depth:
                        if os.path.lexists(target) and not os.path.isdir(target):
                            os.remove(target)             # the student's file of that name: the course's folder wins
                        os.makedirs(target, exist_ok=True)
                        walk(entry.path, target, level + 1)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                size = entry.stat(follow_symlinks=False).st_size
                if size > min(file_bytes, left) or os.path.isdir(target):
                    continue
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as f_in, open(target, "wb") as f_out:
                    f_out.write(f_in.read(size))
                left -= size
            except OSError:
                continue

    walk(folder, scratch, 0)


def paths_to_cover(paths, visible):
    """What of `paths` (the course folder, the notebook's) the kernel's view must cover: each one
    that lies inside a visible folder; where one holds a visible folder (a venv inside the
    course), its entries but those leading to it."""
    def inside(p, v):
        return p == v or p.startswith(v.rstrip("/") + "/")

    found = []

    def cover(path, depth=0):
        if path in visible:
            return
        if not any(inside(v, path) for v in visible):
            found.append(path)
            return
        if depth > 8:
            return
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            cover(os.path.join(path, name), depth + 1)

    for p in paths:
        p = os.path.realpath(p)
        if any(inside(p, v) for v in visible):     # outside every visible folder: not in the view at all
            cover(p)
    return sorted(set(found))
