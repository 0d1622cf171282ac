"""Chinese for the grader's messages: checks, limits, reports, feedback pages (see zh.py).

Code stays code (Q, K^T, sqrt(d_k), keepdims=True, axis, dtype names); Chinese punctuation around
Chinese text, a space between Chinese and code. tests/test_i18n.py holds this table to the msgids
in the code: every one translated, none left over, the same {fields}.
"""
MESSAGES = {
    # ------------------------------------------------------------ the misconception catalogue
    "Likely cause: {diagnosis} {why} Hint: {hint}": "可能的原因：{diagnosis}{why}提示：{hint}",
    "you multiplied the scores by sqrt(d_k) instead of dividing by it.":
        "你把分数乘以了 sqrt(d_k)，而不是除以它。",
    "Dividing by d_k ** -0.5 is the same as multiplying by sqrt(d_k); it makes the scores grow with the key "
    "dimension instead of keeping their spread near 1.":
        "除以 d_k ** -0.5 等于乘以 sqrt(d_k)：这会让分数随键的维度变大，而不是让它们的离散程度保持在 1 左右。",
    "divide by math.sqrt(d_k), or multiply by d_k ** -0.5, but not both.":
        "除以 math.sqrt(d_k)，或者乘以 d_k ** -0.5，但不要把两者合在一起用。",
    "your scores were not scaled at all.": "你的分数完全没有缩放。",
    "Without dividing by sqrt(d_k) the dot products grow with d_k and the softmax saturates.":
        "不除以 sqrt(d_k) 的话，点积会随 d_k 变大，softmax 会趋于饱和。",
    "divide the scores by math.sqrt(d_k) before the softmax.": "在 softmax 之前把分数除以 math.sqrt(d_k)。",
    "you divided by d_k instead of sqrt(d_k).": "你除以了 d_k，而不是 sqrt(d_k)。",
    "The spread of q.k grows like sqrt(d_k), so sqrt(d_k) is the factor that brings it back to 1.":
        "q.k 的离散程度按 sqrt(d_k) 增长，所以能把它拉回到 1 的因子正是 sqrt(d_k)。",
    "use math.sqrt(d_k).": "使用 math.sqrt(d_k)。",
    "you scaled by sqrt(d_model) instead of sqrt(d_k).": "你按 sqrt(d_model) 缩放了，而不是 sqrt(d_k)。",
    "The dot products run over the key dimension d_k (head_dim = d_model / num_heads in multi-head attention); "
    "the two are equal only when the projections are square.":
        "点积是在键的维度 d_k 上求和的（多头注意力中 head_dim = d_model / num_heads）；只有投影矩阵是方阵时两者才相等。",
    "divide by math.sqrt(d_k): K.shape[-1], or d_model // num_heads for one head.":
        "除以 math.sqrt(d_k)：即 K.shape[-1]，对单个头来说是 d_model // num_heads。",
    "you normalised over the wrong axis.": "你在错误的轴上做了归一化。",
    "Each query's weights over the keys must sum to 1, i.e. along the axis you were given (the last one for "
    "attention).":
        "每个查询在所有键上的权重之和必须为 1，也就是沿着给定的轴求和（注意力中是最后一个轴）。",
    "use the `axis` argument in both the max and the sum, with keepdims=True.":
        "在 max 和 sum 中都使用 `axis` 参数，并加上 keepdims=True。",
    "your softmax overflows on large scores: exp() of a large number is inf, and inf / inf is nan.":
        "分数很大时你的 softmax 会溢出：大数的 exp() 是 inf，而 inf / inf 是 nan。",
    "Subtracting the row maximum before exp() changes nothing mathematically and keeps every exponent at most 0.":
        "在 exp() 之前减去每行的最大值，在数学上不改变结果，还能让每个指数都不大于 0。",
    "subtract x.max(axis, keepdims=True) before calling exp.": "调用 exp 之前先减去 x.max(axis, keepdims=True)。",
    "you computed K Q^T instead of Q K^T.": "你计算的是 K Q^T，而不是 Q K^T。",
    "Row i of the scores must belong to query i, so the queries go on the left.":
        "分数的第 i 行必须对应第 i 个查询，所以查询要放在左边。",
    "you multiplied V by the transposed weights.": "你用转置后的权重去乘了 V。",
    "Output row i mixes the values with query i's weights: row i of the weight matrix.":
        "输出的第 i 行是用第 i 个查询的权重（即权重矩阵的第 i 行）对值加权混合得到的。",
    "use weights @ V, without transposing the weights.": "使用 weights @ V，不要转置权重。",
    "you split the heads with a reshape/view but no transpose.": "你用 reshape/view 拆分了多个头，但没有做 transpose。",
    "Reshaping (B, T, D) straight to (B, h, T, hd) mixes tokens across heads; the head axis must come from the "
    "last dimension.":
        "把 (B, T, D) 直接 reshape 成 (B, h, T, hd) 会把不同 token 的数据混进各个头；头轴必须从最后一维拆出来。",
    "view as (B, T, h, hd), then transpose(1, 2).": "先 view 成 (B, T, h, hd)，再 transpose(1, 2)。",
    "you merged the heads with a reshape but no transpose back.": "你用 reshape 合并了多个头，但没有先 transpose 回来。",
    "(B, h, T, hd) must become (B, T, h, hd) before the last two axes are joined.":
        "在合并最后两个轴之前，(B, h, T, hd) 必须先变成 (B, T, h, hd)。",
    "transpose(1, 2), then reshape(B, T, D).": "先 transpose(1, 2)，再 reshape(B, T, D)。",
    "you concatenated the heads but did not apply the output projection W_O.":
        "你拼接了各个头的输出，但没有应用输出投影 W_O。",
    "Multi-head attention mixes the heads' outputs with one more learned matrix.":
        "多头注意力还要用一个可学习的矩阵把各个头的输出混合起来。",
    "multiply the merged heads by W_O (or apply out_proj).": "把合并后的各头输出乘以 W_O（或应用 out_proj）。",
    "you used the wrong weight matrix for Q, K or V.": "你为 Q、K 或 V 用错了权重矩阵。",
    "Q = X @ W_Q, K = X @ W_K and V = X @ W_V each have their own matrix.":
        "Q = X @ W_Q、K = X @ W_K、V = X @ W_V 各有各的矩阵。",
    "check which weight goes with which projection, and the order you return them in.":
        "检查每个权重对应哪个投影，以及返回它们的顺序。",

    # ------------------------------------------------------------ step titles (contract.py)
    "Projection X -> Q, K, V": "投影 X -> Q, K, V",
    "Scores Q K^T": "分数 Q K^T",
    "Scaling by 1/sqrt(d_k)": "按 1/sqrt(d_k) 缩放",
    "Numerically stable softmax": "数值稳定的 softmax",
    "Weighted sum and the five steps chained": "加权求和，以及前五步的串联",
    "Multi-head attention": "多头注意力",
    "The full nn.Module": "完整的 nn.Module",

    # ------------------------------------------------------------ checks.py: what came back, how it compares
    "malformed value": "值的格式不正确",
    "malformed scalar": "标量的格式不正确",
    "malformed array ({error})": "数组的格式不正确（{error}）",
    "malformed sequence": "序列的格式不正确",
    "unknown value kind": "未知的值类型",
    "malformed parameter list": "参数列表的格式不正确",
    "a GPU is present, but CUDA could not start in the isolated process that runs the submission ({error})":
        "评分机器上有 GPU，但 CUDA 无法在运行提交代码的隔离进程中启动（{error}）",
    "a {type} of dtype {dtype} (only numeric dtypes can be graded)":
        "一个 dtype 为 {dtype} 的 {type}（只有数值类型的 dtype 才能评分）",
    "a {type} of shape {shape} and dtype {dtype}": "一个形状为 {shape}、dtype 为 {dtype} 的 {type}",
    "a {type} of {n} items": "一个含 {n} 个元素的 {type}",
    "an object of type {type}": "一个类型为 {type} 的对象",
    "{what} should return a pair ({names}); it returned {got}.": "{what} 应返回一对值（{names}），但它返回了 {got}。",
    "{what} should return {n} values ({names}); it returned {got}.":
        "{what} 应返回 {n} 个值（{names}），但它返回了 {got}。",
    "{what} returned a {type}, a subclass of numpy.ndarray; return a plain numpy.ndarray (np.asarray(result)).":
        "{what} 返回了 {type}，它是 numpy.ndarray 的子类；请返回普通的 numpy.ndarray（np.asarray(result)）。",
    "{what} returned a single number ({type}), not an array: did a sum or max drop the axes you needed "
    "(keepdims=True)?":
        "{what} 返回的是单个数（{type}），而不是数组：是不是某个 sum 或 max 去掉了你需要的轴（keepdims=True）？",
    "{what} returned a torch tensor; this step works with numpy arrays.":
        "{what} 返回了 torch 张量；这一步用的是 numpy 数组。",
    "{what} should return a numpy array; it returned {got}.": "{what} 应返回 numpy 数组，但它返回了 {got}。",
    "{what} returned a tensor on {got}, but its input was on {device}: create new tensors with device=x.device "
    "(or use *_like functions).":
        "{what} 返回的张量在 {got} 上，而它的输入在 {device} 上：新建张量时请用 device=x.device（或使用 *_like 函数）。",
    "{what} should return a torch tensor; it returned {got}.": "{what} 应返回 torch 张量，但它返回了 {got}。",
    "{what} has shape {got}; expected {shape}.": "{what} 的形状是 {got}，应为 {shape}。",
    " The last two axes look swapped.": "最后两个轴似乎被交换了。",
    "{what} has dtype {got}; expected {dtype}, the dtype of the input. Avoid hard-coding a dtype (e.g. float32 "
    "or .double()) in new arrays.":
        "{what} 的 dtype 是 {got}，应为输入的 dtype {dtype}。新建数组时不要写死 dtype（例如 float32 或 .double()）。",
    "{what} has dtype {got}; expected {dtype}, the dtype of the input. Lower precision loses digits the check "
    "needs: don't cast the result down.":
        "{what} 的 dtype 是 {got}，应为输入的 dtype {dtype}。更低的精度会丢掉检查所需的有效数字：不要把结果转换成更低的精度。",
    "{what}: {bad} of {n} values are NaN or infinite where the expected values are finite (first at index "
    "{index}).":
        "{what}：{n} 个值中有 {bad} 个是 NaN 或无穷大，而对应的期望值是有限的（第一个在索引 {index} 处）。",
    "{what}: {bad} of {n} values differ from the expected ones ({share} match, tolerance rtol={rtol}, "
    "atol={atol} for {dtype}). Worst at index {index}: expected {expected}, got {got}.":
        "{what}：{n} 个值中有 {bad} 个与期望值不同（{share} 一致，{dtype} 的容差为 rtol={rtol}、atol={atol}）。"
        "相差最大的在索引 {index} 处：期望 {expected}，实际 {got}。",
    "{what}: {bad} of {n} values are NaN or infinite (first at index {index}). {hint}":
        "{what}：{n} 个值中有 {bad} 个是 NaN 或无穷大（第一个在索引 {index} 处）。{hint}",

    # ------------------------------------------------------------ sandbox.py: what the student's code did
    "{what} raised NotImplementedError{message}. This part is still a stub: write its body and run the "
    "notebook's visible tests.":
        "{what} 抛出了 NotImplementedError{message}。这部分还是待实现的桩代码：请写出它的函数体，并运行笔记本中的可见测试。",
    "{what} raised {error}": "{what} 抛出了 {error}",
    "\nYour code's traceback:\n{traceback}": "\n你的代码的回溯信息：\n{traceback}",
    "your code exited (exit code {code}) while running {what}": "你的代码在运行 {what} 时退出了（退出码 {code}）",
    "your code used up its CPU time (signal SIGXCPU) while running {what}":
        "你的代码在运行 {what} 时用完了 CPU 时间（信号 SIGXCPU）",
    "your code wrote a file over the size limit (signal SIGXFSZ) while running {what}":
        "你的代码在运行 {what} 时写入的文件超过了大小限制（信号 SIGXFSZ）",
    "your code crashed (signal {signal}, {name}) while running {what}":
        "你的代码在运行 {what} 时崩溃了（信号 {signal}，{name}）",
    "{problem}. Calls to sys.exit, os._exit or code that crashes Python stop the grading of this step.":
        "{problem}。调用 sys.exit、os._exit 或让 Python 崩溃的代码会中止这一步的评分。",
    "\nLast output of your code:\n{output}": "\n你的代码最后的输出：\n{output}",
    "Grading stopped: your submission used up its {seconds} s of running time before {what}. Look for loops "
    "that never end or very slow code.":
        "评分已停止：在运行 {what} 之前，你的提交已用完 {seconds} 秒的运行时间。请检查是否有永不结束的循环或非常慢的代码。",
    "{what} timed out after {seconds} s. Look for a loop that never ends, a sleep, or code that waits for input.":
        "{what} 运行 {seconds} 秒后超时。请检查是否有永不结束的循环、sleep，或在等待输入的代码。",
    "{what} used more than {gib} GiB of memory (the limit) and stopped with MemoryError. The hidden tests use "
    "small inputs: look for an array that grows without end or an intermediate far larger than the inputs.":
        "{what} 使用的内存超过了 {gib} GiB（上限），因 MemoryError 而停止。隐藏测试的输入都很小："
        "请检查是否有无限增长的数组，或比输入大得多的中间结果。",
    "{file} does not define `{name}`. Keep the name and signature from the stub.":
        "{file} 没有定义 `{name}`。请保留桩代码中的名称和签名。",
    "\nRunning your file stopped with {error}: {message}\n{traceback}":
        "\n运行你的文件时因 {error} 而中止：{message}\n{traceback}",
    "No file for step {step}: expected {a} or {b} in the submission.": "第 {step} 步没有文件：提交中应有 {a} 或 {b}。",
    "Your code's result could not be read back: {problem}.": "无法读回你的代码的结果：{problem}。",
    "\n... ({n} more bytes of output not shown)": "\n...（还有 {n} 字节的输出未显示）",
    "a reply of {size} bytes is over the limit": "{size} 字节的回复超过了上限",
    "the reply is not an object": "回复不是一个对象",
    "malformed error reply": "错误回复的格式不正确",
    "{file} (loading it)": "{file}（加载时）",
    "Grading of {file} stopped after {n} crashes or time-outs.": "{file} 已崩溃或超时 {n} 次，评分停止。",

    # ------------------------------------------------------------ grading.py, notebook.py
    "Passed.": "通过。",
    "skipped": "已跳过",
    "The grader could not finish this check because of an internal error (not your code's fault). Please tell "
    "your instructor.":
        "评分程序因内部错误未能完成这项检查（不是你的代码的问题）。请告诉你的老师。",
    "No file for step {step}: expected {a} or {b}.": "第 {step} 步没有文件：应为 {a} 或 {b}。",
    "[pass]": "[通过]",
    "[FAIL]": "[未通过]",
    "[skip]": "[跳过]",
    "Step {step}: {score}/{max_score}": "第 {step} 步：{score}/{max_score}",
    "The grader could not grade step {step} (an internal error, not your code's fault). Please tell your "
    "instructor.":
        "评分程序无法为第 {step} 步评分（内部错误，不是你的代码的问题）。请告诉你的老师。",
    "(The grader logged diagnostics for the instructor; `python -m autograder grade` on this file shows them.)":
        "（评分程序为老师记录了诊断信息；对这个文件运行 `python -m autograder grade` 即可看到。）",

    # ------------------------------------------------------------ report.py, github.py, junit.py
    "\n... ({n} more characters)": "\n...（还有 {n} 个字符未显示）",
    "Total {score}/{max_score}": "总分 {score}/{max_score}",
    "step": "步骤",
    "file": "文件",
    "score": "得分",
    "checks": "检查项",
    "total": "总计",
    "(missing)": "（缺失）",
    "step {step}: {message}": "第 {step} 步：{message}",
    "(same message as {check})": "（与 {check} 的信息相同）",
    "{check} {name}: passed, with a note": "{check} {name}：通过，附说明",
    "{check} {name}: skipped ({reason})": "{check} {name}：已跳过（{reason}）",
    "| Step | File | Score | Checks |": "| 步骤 | 文件 | 得分 | 检查项 |",
    "✅ all {n} passed": "✅ 全部 {n} 项通过",
    "❌ {failed} of {n} failed": "❌ {n} 项中有 {failed} 项未通过",
    "| | **Total** | **{score}/{max_score}** | |": "| | **总分** | **{score}/{max_score}** | |",
    "### Step {step}: {title} ({score}/{max_score})": "### 第 {step} 步：{title}（{score}/{max_score}）",
    "Skipped (no points): {checks}": "已跳过（不计分）：{checks}",
    "Step {step} ({score}/{max_score}): {title}": "第 {step} 步（{score}/{max_score}）：{title}",
    "failed": "未通过",
    "same as {check}": "同 {check}",
    "Step {step}: {title}": "第 {step} 步：{title}",

    # ------------------------------------------------------------ html_report.py
    "attention-kit feedback: {name}": "attention-kit 反馈：{name}",
    "title": "标题",
    "check": "检查项",
    "what": "内容",
    "points": "分数",
    "message": "信息",
    "missing": "缺失",
    "What your code printed:": "你的代码打印的内容：",
    "Hint: {hint}": "提示：{hint}",
    "keys": "键",
    "queries": "查询",
    "expected": "期望",
    "yours": "你的",
    "yours - expected": "你的 - 期望",
    "Darkest blue: {top} or more.": "最深的蓝色：{top} 及以上。",
    " In the difference, red is more weight than expected, blue less; full colour at +-{scale}. Largest "
    "difference: {worst}":
        "差值图中，红色表示权重比期望多，蓝色表示比期望少；颜色最深处为 +-{scale}。最大差值：{worst}",
    " (grey cells: NaN or infinite).": "（灰色格子：NaN 或无穷大）。",
    ".": "。",
    " Your weights could not be drawn:": "你的权重无法绘制：",
    "Attention weights for one example: {what}.": "一个示例的注意力权重：{what}。",
    "softmax(x) for x of shape (5, 7)": "形状为 (5, 7) 的 x 的 softmax(x)",
    "the weights from self_attention(X, W_Q, W_K, W_V), X of shape (5, 12)":
        "self_attention(X, W_Q, W_K, W_V) 返回的权重，X 的形状为 (5, 12)",
    "head 0 of the weights from multi_head_attention(x, W_Q, W_K, W_V, W_O, 3), x of shape (1, 5, 12)":
        "multi_head_attention(x, W_Q, W_K, W_V, W_O, 3) 返回的权重中的第 0 个头，x 的形状为 (1, 5, 12)",
    "head 0 of attn_weights from {call}, x of shape (1, 5, 12)":
        "{call} 返回的 attn_weights 中的第 0 个头，x 的形状为 (1, 5, 12)",
    "attn_weights from {call}, x of shape (1, 5, 12)": "{call} 返回的 attn_weights，x 的形状为 (1, 5, 12)",
    "it did not return a pair (out, weights)": "它没有返回一对值 (out, weights)",
    "its weights have shape {shape}, expected {expected}": "它的权重形状是 {shape}，应为 {expected}",

    # ------------------------------------------------------------ batch.py
    "the zip holds too many entries": "zip 文件中的条目太多",
    "{file} in the zip is larger than the limit": "zip 中的 {file} 超过了大小上限",
    "the zip could not be read ({error})": "无法读取该 zip 文件（{error}）",
    "grading failed: {error}": "评分失败：{error}",
    "more than one submission for this student ({entries}): keep one and grade again":
        "该学生有不止一份提交（{entries}）：请只保留一份，然后重新评分",
    "{name} is a symbolic link; links are not followed, so it was not graded":
        "{name} 是一个符号链接；评分程序不跟随链接，因此没有评分",
    "{name} is not a submission: only folders and .zip archives are graded":
        "{name} 不是一份提交：只评文件夹和 .zip 压缩包",

    # ------------------------------------------------------------ the hidden suites: shared pieces
    "no CUDA GPU on the grading machine; GPU checks carry no points and are skipped":
        "评分机器上没有 CUDA GPU；GPU 检查项不计分，已跳过",
    "{name} from {what}": "{what} 返回的 {name}",
    "{what} on {device}": "{what}（在 {device} 上）",
    "{what} on {device} in {dtype}": "{what}（在 {device} 上，{dtype}）",
    "{what} in {dtype}": "{what}（{dtype}）",
    "The same in float32 (dtype kept)": "同上，float32（保持 dtype）",
    "Stable, but the values show the mistake named in {check} ({ids}); that costs the numbers points, not these.":
        "数值稳定，但结果中有 {check} 指出的错误（{ids}）；扣的是数值检查的分，而不是这一项的分。",
    "{what}: attention weights must lie in [0, 1]; found {low} .. {high}.":
        "{what}：注意力权重必须在 [0, 1] 之间；实际范围是 {low} .. {high}。",
    "{what} returned ({second}, {first}): return them in the order ({first}, {second}).":
        "{what} 返回的是 ({second}, {first})：请按 ({first}, {second}) 的顺序返回。",
    "{what}: {name} has shape {got}; expected {shape}. Return every head's weights, (B, num_heads, T, T), not "
    "their average over the heads.":
        "{what}：{name} 的形状是 {got}，应为 {shape}。请返回每个头的权重 (B, num_heads, T, T)，而不是它们在各个头上的平均值。",

    # ------------------------------------------------------------ step 1
    "Returns (Q, K, V) with shapes (..., T, d_k), (..., T, d_k), (..., T, d_v)":
        "返回 (Q, K, V)，形状分别为 (..., T, d_k)、(..., T, d_k)、(..., T, d_v)",
    "Q = X @ W_Q, K = X @ W_K, V = X @ W_V, float64, two leading batch dimensions":
        "Q = X @ W_Q、K = X @ W_K、V = X @ W_V，float64，带两个前置批次维度",
    "A single sequence X of shape (T, d_model)": "单个序列 X，形状为 (T, d_model)",
    "A sequence of one token (T = 1)": "只有一个 token 的序列（T = 1）",
    "Each token is projected on its own: reordering the tokens reorders Q, K and V":
        "每个 token 独立投影：打乱 token 的顺序只会相应地打乱 Q、K 和 V",
    "{name}: reordering the tokens of X should only reorder the rows of {name}. Each row of X is projected by "
    "the same matrix, independently of the others.":
        "{name}：打乱 X 中 token 的顺序，只应相应地打乱 {name} 的行。X 的每一行都由同一个矩阵独立投影，与其他行无关。",

    # ------------------------------------------------------------ step 2
    "Scores have shape (..., T_q, T_k) for T_q != T_k": "T_q != T_k 时，分数的形状为 (..., T_q, T_k)",
    "scores[..., i, j] = Q[..., i, :] . K[..., j, :], float64": "scores[..., i, j] = Q[..., i, :] . K[..., j, :]，float64",
    "Plain matrices Q (T_q, d_k) and K (T_k, d_k)": "普通矩阵 Q (T_q, d_k) 和 K (T_k, d_k)",
    "T_q == T_k (self-attention): queries index the rows, keys the columns":
        "T_q == T_k（自注意力）：行对应查询，列对应键",
    "attention_scores(Q, Q) is symmetric: q_i . q_j = q_j . q_i": "attention_scores(Q, Q) 是对称的：q_i . q_j = q_j . q_i",
    "\nHint: with batch axes, `K.T` reverses *every* axis, not just the last two; use np.swapaxes(K, -1, -2).":
        "\n提示：有批次轴时，`K.T` 会反转*所有*轴，而不只是最后两个；请使用 np.swapaxes(K, -1, -2)。",
    "attention_scores(Q, Q) should be symmetric in its last two axes; it is not. Each entry must be the dot "
    "product of one query with one key.":
        "attention_scores(Q, Q) 在最后两个轴上应当是对称的，但结果不是。每个元素都必须是一个查询与一个键的点积。",

    # ------------------------------------------------------------ step 3
    "Output has the shape of the scores": "输出与分数的形状相同",
    "Divided by sqrt(d_k), float64 (d_k = 16)": "除以 sqrt(d_k)，float64（d_k = 16）",
    "The same in float32 (float64 output accepted with a note: NumPy 2 promotion)":
        "同上，float32（float64 的输出也接受，并附说明：NumPy 2 的类型提升）",
    "Other key sizes: d_k = 2, 5 and 64": "其他键维度：d_k = 2、5 和 64",
    "The caller's scores are left unchanged (no in-place division)": "调用者传入的分数保持不变（不做原地除法）",
    "A plain (T_q, T_k) matrix of scores": "普通的 (T_q, T_k) 分数矩阵",

    # ------------------------------------------------------------ step 4
    "Output has the input's shape (rank 3)": "输出与输入的形状相同（3 维）",
    "Values along the last axis, float64": "沿最后一个轴的数值，float64",
    "Values along the last axis, float32 (dtype kept)": "沿最后一个轴的数值，float32（保持 dtype）",
    "The axis argument is honoured (axis=0 and axis=1)": "遵循 axis 参数（axis=0 和 axis=1）",
    "Weights lie in [0, 1], sum to 1, and ignore a constant shift of the row":
        "权重在 [0, 1] 之间、和为 1，且整行加上同一个常数时不变",
    "-inf entries get weight exactly 0 (as in a masked row)": "-inf 元素的权重恰好为 0（如同被掩码的行）",
    "No overflow for scores around +-1000, float64": "分数在 +-1000 左右时不溢出，float64",
    "No overflow for scores around +-100, float32 (exp overflows float32 above 88)":
        "分数在 +-100 左右时不溢出，float32（exp 的参数超过 88 时 float32 会溢出）",
    "{what}: values must lie in [0, 1]; found {low} .. {high}.": "{what}：数值必须在 [0, 1] 之间；实际范围是 {low} .. {high}。",
    "{what}: the weights along the last axis should sum to 1; the row at {index} sums to {total}. Did you divide "
    "by the sum over the right axis (with keepdims=True)?":
        "{what}：沿最后一个轴的权重之和应为 1；位于 {index} 的那一行之和为 {total}。你是否除以了正确轴上的和（并使用 keepdims=True）？",
    "softmax(x + 10) should equal softmax(x): adding the same number to every entry of a row cannot change the "
    "weights.":
        "softmax(x + 10) 应当等于 softmax(x)：给一行的每个元素加上同一个数，不应改变权重。",
    "A -inf score must give weight 0: exp(-inf - max) is exactly 0 when the row has a finite maximum.":
        "-inf 的分数必须得到权重 0：当这一行的最大值有限时，exp(-inf - max) 恰好为 0。",
    "{what}: entries that were -inf must get weight exactly 0.": "{what}：原来为 -inf 的元素，权重必须恰好为 0。",

    # ------------------------------------------------------------ step 5
    "weighted_sum gives (..., T_q, d_v) for T_q != T_k": "T_q != T_k 时，weighted_sum 给出 (..., T_q, d_v)",
    "weighted_sum = weights @ V, float64 and float32 (dtype kept; T_q == T_k, so a transpose would fit the shape)":
        "weighted_sum = weights @ V，float64 和 float32（保持 dtype；T_q == T_k，所以转置后形状也对得上）",
    "self_attention returns out (..., T, d_v) and weights (..., T, T)":
        "self_attention 返回 out (..., T, d_v) 和 weights (..., T, T)",
    "softmax(Q K^T / sqrt(d_k)) V and its weights, float64": "softmax(Q K^T / sqrt(d_k)) V 及其权重，float64",
    "Each query's weights lie in [0, 1] and sum to 1 over the keys": "每个查询的权重都在 [0, 1] 之间，且在所有键上之和为 1",
    "weights: each row (one query, all keys) must lie in [0, 1] and sum to 1; row sums range from {low} to "
    "{high}.":
        "weights：每一行（一个查询、所有键）都必须在 [0, 1] 之间且和为 1；行和的范围是 {low} 到 {high}。",

    # ------------------------------------------------------------ step 6
    "split_heads(x of shape {shape}, num_heads={h})": "split_heads(形状为 {shape} 的 x, num_heads={h})",
    "merge_heads(x of shape {shape})": "merge_heads(形状为 {shape} 的 x)",
    "{what} has shape {got}; expected {shape}. The head axis must come before the time axis: after the view to "
    "(B, T, h, head_dim), transpose(1, 2).":
        "{what} 的形状是 {got}，应为 {shape}。头轴必须在时间轴之前：view 成 (B, T, h, head_dim) 之后，再 transpose(1, 2)。",
    "{what}: the values are close to the expected ones but not identical (largest difference {worst}). "
    "Splitting or merging heads only rearranges numbers (view/reshape and transpose), so each value should "
    "come out exactly as it went in.":
        "{what}：数值与期望值接近，但不完全相同（最大差值 {worst}）。拆分或合并头只是重新排列数字"
        "（view/reshape 和 transpose），所以每个值都应原样保留。",
    "{what}: each query's weights over the keys (the last axis) should sum to 1; the row at (batch, head, "
    "query) = {index} sums to {total}.":
        "{what}：每个查询在所有键（最后一个轴）上的权重之和应为 1；(batch, head, query) = {index} 那一行之和为 {total}。",
    # the attention layer's masks (checks/attention.py)
    "A query with no key to attend gets weights 0 (and output 0), never NaN.":
        "没有任何键可以关注的查询，权重为 0（输出也为 0），绝不能是 NaN。",
    "{what}: masked entries must get weight exactly 0: fill the masked scores with -inf before the softmax.":
        "{what}：被掩码的位置的权重必须恰好为 0：在 softmax 之前把被掩码的分数填为 -inf。",
    "split_heads puts head i's columns i*hd .. (i+1)*hd-1 on the head axis (exact values, float64)":
        "split_heads 把第 i 个头的列 i*hd .. (i+1)*hd-1 放到头轴上（数值精确，float64）",
    "merge_heads undoes split_heads: (B, h, T, hd) -> (B, T, h*hd) (exact values, float64)":
        "merge_heads 是 split_heads 的逆操作：(B, h, T, hd) -> (B, T, h*hd)（数值精确，float64）",
    "multi_head_attention returns (out, weights) of shapes (B, T, D) and (B, h, T, T)":
        "multi_head_attention 返回 (out, weights)，形状分别为 (B, T, D) 和 (B, h, T, T)",
    "multi_head_attention values, out and weights, float64": "multi_head_attention 的数值：out 和 weights，float64",
    "multi_head_attention values, float32 (dtype kept)": "multi_head_attention 的数值，float32（保持 dtype）",
    "Attention weights lie in [0, 1] and each query's row sums to 1, in every head":
        "每个头中，注意力权重都在 [0, 1] 之间，且每个查询的那一行之和为 1",
    "On CUDA, float32: results stay on the GPU in float32 and match the reference":
        "CUDA 上，float32：结果留在 GPU 上、保持 float32，并与参考实现一致",

    # ------------------------------------------------------------ step 7
    "{name} has shape {got}, expected {shape}": "{name} 的形状是 {got}，应为 {shape}",
    "missing: {names}": "缺少：{names}",
    "wrong shape: {problems}": "形状错误：{problems}",
    "not in the contract: {names}": "约定之外的参数：{names}",
    "no parameters": "没有参数",
    "self.W_q, self.W_k, self.W_v = nn.Linear(d_model, d_model, bias=False) (three of them)":
        "self.W_q, self.W_k, self.W_v = nn.Linear(d_model, d_model, bias=False)（共三个）",
    "self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias}) (four of "
    "them)":
        "self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias})（共四个）",
    "self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias}) (four of "
    "them); with bias=False they have no bias parameters":
        "self.q_proj, self.k_proj, self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias={bias})"
        "（共四个）；bias=False 时它们没有偏置参数",
    "{module} should have exactly the parameters {expected}; {problems}. Your module has: {listing}. Define "
    "{layers}: the grader loads its weights by these names.":
        "{module} 应当恰好有这些参数：{expected}；{problems}。你的模块有：{listing}。请定义 {layers}："
        "评分程序按这些名称加载权重。",
    "{what}: the grader could not load its parameters into your module.":
        "{what}：评分程序无法把参数加载到你的模块中。",
    "Note: {module} has parameters the grader does not set ({names}); they keep their random initial values, "
    "which changes the output.":
        "注意：{module} 有评分程序不会设置的参数（{names}）；它们保持随机的初始值，这会改变输出。",
    "{what}: each query's weights over the keys (the last axis) should sum to 1; the row at index {index} sums "
    "to {total}.":
        "{what}：每个查询在所有键（最后一个轴）上的权重之和应为 1；索引 {index} 那一行之和为 {total}。",
    "SingleHeadSelfAttention(d_model) has W_q, W_k, W_v: nn.Linear(d_model, d_model, bias=False)":
        "SingleHeadSelfAttention(d_model) 有 W_q、W_k、W_v：nn.Linear(d_model, d_model, bias=False)",
    "SingleHeadSelfAttention forward: out and attn_weights, float64":
        "SingleHeadSelfAttention 的 forward：out 和 attn_weights，float64",
    "SingleHeadSelfAttention forward, float32 (dtype kept)": "SingleHeadSelfAttention 的 forward，float32（保持 dtype）",
    "MultiHeadSelfAttention has q_proj, k_proj, v_proj, out_proj, with biases by default and none with "
    "bias=False":
        "MultiHeadSelfAttention 有 q_proj、k_proj、v_proj、out_proj，默认带偏置，bias=False 时不带",
    "MultiHeadSelfAttention(12, 3, bias=True) forward: out and attn_weights, float64":
        "MultiHeadSelfAttention(12, 3, bias=True) 的 forward：out 和 attn_weights，float64",
    "MultiHeadSelfAttention(12, 4, bias=False) forward, float64": "MultiHeadSelfAttention(12, 4, bias=False) 的 forward，float64",
    "MultiHeadSelfAttention(12, 3) forward, float32 (dtype kept)":
        "MultiHeadSelfAttention(12, 3) 的 forward，float32（保持 dtype）",
    "Both modules' attention weights lie in [0, 1] and each query's row sums to 1":
        "两个模块的注意力权重都在 [0, 1] 之间，且每个查询的那一行之和为 1",
    "On CUDA, float32: both modules run on the GPU, keep float32 and match the reference":
        "CUDA 上，float32：两个模块都在 GPU 上运行、保持 float32，并与参考实现一致",
}
