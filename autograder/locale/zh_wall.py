"""Chinese for the wall's messages: files refused as data, the total disk and memory limits,
replies that could not be read back (submitted_files.py, sandbox.py, checks.py)."""

MESSAGES = {
    # ------------------------------------------------------------ submitted_files.py
    "{file} is a symbolic link: submit the file itself, not a link to it.":
        "{file} 是一个符号链接：请提交文件本身，而不是指向它的链接。",
    "{file} is {kind}, not a regular file: submit the file itself.":
        "{file} 是{kind}，不是普通文件：请提交文件本身。",
    "{file} could not be read ({error}).": "无法读取 {file}（{error}）。",
    "{file} is {size} MiB, over the limit of {limit} MiB for one file.":
        "{file} 大小为 {size} MiB，超过了单个文件 {limit} MiB 的上限。",
    "{file} is over the limit of {limit} MiB for one file.": "{file} 超过了单个文件 {limit} MiB 的上限。",
    "The submission holds more than {n} files and folders: only the first ones were searched.":
        "提交中的文件和文件夹超过 {n} 个：只搜索了前面的部分。",
    "Folders nested deeper than {n} levels were not searched.": "嵌套超过 {n} 层的文件夹没有被搜索。",
    "The submission's step files take {size} MiB together, over the limit of {limit} MiB.":
        "提交中各步骤文件合计 {size} MiB，超过了 {limit} MiB 的上限。",
    "a symbolic link": "一个符号链接",
    "a named pipe (FIFO)": "一个命名管道（FIFO）",
    "a socket": "一个套接字",
    "a device": "一个设备文件",
    "a folder": "一个文件夹",
    "not a regular file": "非普通文件",

    # ------------------------------------------------------------ sandbox.py
    "{what} wrote more than {mib} MiB of files (the limit for everything your code writes: its folder, /tmp and "
    "/dev/shm together) and stopped with \"No space left on device\". The hidden tests need no files: look for "
    "code that writes without end.":
        "{what} 写入的文件超过了 {mib} MiB（你的代码所写内容的总上限：它的文件夹、/tmp 和 /dev/shm 合计），"
        "因“设备上没有空间”而停止。隐藏测试不需要任何文件：请检查是否有无休止写入的代码。",
    "{what} used more than {gib} GiB of memory (the limit, counting all its processes and shared memory) and was "
    "stopped by the system. The hidden tests use small inputs: look for memory that grows without end.":
        "{what} 使用的内存超过了 {gib} GiB（上限，计入它的所有进程和共享内存），已被系统终止。"
        "隐藏测试的输入都很小：请检查是否有无限增长的内存。",
    "a malformed reply ({error})": "格式不正确的回复（{error}）",
    "malformed reply to loading the file": "加载文件的回复格式不正确",

    # ------------------------------------------------------------ checks.py
    "malformed reply ({error})": "回复的格式不正确（{error}）",
}
