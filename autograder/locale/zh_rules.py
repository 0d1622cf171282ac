"""Chinese for complexity and forbidden-API checks (see zh.py).

Conventions as in zh_core.py: code stays code (@, np.apply_along_axis, keepdims=True, dotted API
names), Chinese punctuation around Chinese text, a space between Chinese and code.
"""
MESSAGES = {
    # ------------------------------------------------------------ the misconception catalogue
    "your code loops in Python over positions, batch entries or heads.":
        "你的代码用 Python 循环逐个处理位置、批次中的样本或注意力头。",
    "A Python loop runs the interpreter once per item; whole-array operations run the same arithmetic in "
    "compiled code for all items at once, which is what keeps attention fast on long sequences and large "
    "batches.":
        "Python 循环每处理一项都要让解释器跑一遍；整数组运算则在编译好的代码里一次算完所有项，"
        "这正是注意力在长序列和大批次上仍然快的原因。",
    "replace the loop by operations on whole arrays: @ (matmul) and broadcasting over the leading axes, "
    "reductions with axis=... and keepdims=True.":
        "用整数组运算代替循环：@（matmul）和在前导轴上的广播，以及带 axis=... 和 keepdims=True 的归约。",
    "you formed the weighted sum by broadcasting the weights against V and summing, which builds a "
    "(..., T_q, T_k, d_v) array.":
        "你把权重和 V 广播相乘再求和来得到加权和，这会构造一个 (..., T_q, T_k, d_v) 的数组。",
    "weights[..., :, :, None] * V[..., None, :, :] holds every product before the sum: T_k times the memory "
    "of the result, for what one matrix product computes without it.":
        "weights[..., :, :, None] * V[..., None, :, :] 在求和之前保存了每一个乘积：内存是结果的 T_k 倍，"
        "而一次矩阵乘法不需要它就能算出同样的结果。",
    "use weights @ V.": "使用 weights @ V。",
    "your code calls a library function that this step asks you to write yourself.":
        "你的代码调用了一个库函数，而这一步要求你自己实现它。",
    "The step is there for you to build it from the operations underneath; the library call skips what the "
    "exercise teaches.":
        "这一步的目的是让你用更基础的运算把它搭出来；直接调用库函数就跳过了这个练习要教的内容。",
    "write it with the basic operations the notebook uses (exp, max, sum, @, transpose); the message names "
    "the call to replace.":
        "用笔记本里用到的基本运算（exp、max、sum、@、transpose）来写；上面的信息指出了需要替换的调用。",

    # ------------------------------------------------------------ check titles
    "Vectorised: no Python loop over tokens or batch entries, memory within a constant factor of the results":
        "向量化：没有逐个词元或逐个批次样本的 Python 循环，内存不超过结果大小的常数倍",
    "Calls none of the library softmax functions (torch.softmax, F.softmax, scipy.special.softmax, ...)":
        "不调用任何库里的 softmax 函数（torch.softmax、F.softmax、scipy.special.softmax 等）",
    "Vectorised: no Python loop over tokens or batch entries (over heads: a note), memory and multiply-adds "
    "within a constant factor of the reference's":
        "向量化：没有逐个词元或逐个批次样本的 Python 循环（逐头循环只给出提示），内存和乘加次数不超过参考实现的常数倍",
    "Calls none of the library attention functions (F.scaled_dot_product_attention, nn.MultiheadAttention, ...)":
        "不调用任何库里的注意力函数（F.scaled_dot_product_attention、nn.MultiheadAttention 等）",
    "Vectorised, heads batched: no Python loop over tokens, batch entries or heads; memory and multiply-adds "
    "within a constant factor of the reference's":
        "向量化且各头成批计算：没有逐个词元、逐个批次样本或逐头的 Python 循环；内存和乘加次数不超过参考实现的常数倍",

    # ------------------------------------------------------------ complexity (complexity.py)
    "malformed measurement": "测量结果的格式不正确",
    "{what} called {calls}, which this step asks you to write yourself (off-limits here: {listed}).":
        "{what} 调用了 {calls}，而这一步要求你自己实现它（这里禁止使用：{listed}）。",
    "{what} could not be measured: the grader could not load its parameters into your module (the structure "
    "checks say why).":
        "无法测量 {what}：评分程序无法把参数加载到你的模块中（结构检查会说明原因）。",
    "{what}: the grader's counters were switched off while your code ran ({how}), so it could not be "
    "measured. A submission must not call sys.settrace, sys.setprofile or tracemalloc, nor change torch's "
    "mode stacks.":
        "{what}：你的代码运行时关闭了评分程序的计数器（{how}），因此无法对它进行测量。"
        "提交的代码不能调用 sys.settrace、sys.setprofile 或 tracemalloc，也不能改动 torch 的模式栈。",
    "ran {counts} lines of its own code": "执行了自身代码 {counts} 行",
    "made {counts} function calls": "进行了 {counts} 次函数调用",
    "ran {counts} tensor operations": "执行了 {counts} 次张量运算",
    "{what}: at sequence lengths {sizes} your code {did}. The count grows with the length, so some Python code "
    "runs once per position: is there a loop (for, a comprehension, np.apply_along_axis) over the tokens? "
    "Whole-array operations (@, broadcasting, sum(axis=..., keepdims=True)) handle every position at once.":
        "{what}：序列长度为 {sizes} 时，你的代码{did}。这个数随长度增长，说明有一段 Python 代码对每个位置都运行一次："
        "是不是对词元用了循环（for、推导式、np.apply_along_axis）？整数组运算（@、广播、"
        "sum(axis=..., keepdims=True)）可以一次处理所有位置。",
    "{what}: at batch sizes {sizes} your code {did}. The count grows with the batch, so some Python code runs "
    "once per batch entry: is there a loop over the batch? @ and broadcasting work on leading batch axes "
    "unchanged.":
        "{what}：批次大小为 {sizes} 时，你的代码{did}。这个数随批次增长，说明有一段 Python 代码对每个样本都运行一次："
        "是不是对批次用了循环？@ 和广播本来就能直接作用于前导的批次轴。",
    "Note: with {sizes} heads your code {did}: it loops over the heads, as the lesson's demo does. That costs "
    "nothing in this step; in step 7, the module a real model would use, all heads must run at once (split "
    "the heads, one batched @, merge them).":
        "注意：头数为 {sizes} 时，你的代码{did}：它像课程里的演示一样逐头循环。这一步不扣分；"
        "但在第 7 步（真实模型会用的模块）中，所有头必须一起计算（拆分头、一次批量 @、再合并）。",
    "{what}: with {sizes} heads your code {did}. The count grows with the number of heads, so it loops over "
    "them. The module a real model uses runs all heads at once: view the projections as (B, T, h, head_dim), "
    "transpose to (B, h, T, head_dim) and use one batched @ for every head.":
        "{what}：头数为 {sizes} 时，你的代码{did}。这个数随头数增长，说明它在逐头循环。"
        "真实模型使用的模块会一次计算所有头：把投影 view 成 (B, T, h, head_dim)，转置为 (B, h, T, head_dim)，"
        "再用一次批量 @ 计算所有头。",
    "Note: {what} raised {error} on inputs with batch axes, so its work was not measured along the batch (the "
    "checks with batch axes say more).":
        "注意：{what} 在带批次轴的输入上抛出了 {error}，因此没有沿批次方向测量它的工作量（带批次轴的检查会给出更多信息）。",
    "{what} on inputs of shapes {shapes} held about {ratio} times the memory its results take ({result}) at "
    "its peak; up to {factor} times is allowed. Is an intermediate much larger than the inputs and results "
    "built by broadcasting, such as (..., T, T, d)? A matrix product (@) never builds one.":
        "{what} 在形状为 {shapes} 的输入上，峰值时占用的内存约为其结果所需内存（{result}）的 {ratio} 倍；"
        "允许的上限是 {factor} 倍。是不是通过广播构造了一个比输入和结果大得多的中间数组，例如 (..., T, T, d)？"
        "矩阵乘法（@）从不构造这样的数组。",
    "{what} did {ratio} times the multiply-adds of the reference on the same inputs ({flops} against "
    "{reference}). Is something computed more than once, such as the full projections inside a loop over "
    "the heads?":
        "在相同输入上，{what} 的乘加次数是参考实现的 {ratio} 倍（{flops} 对 {reference}）。"
        "是不是有些东西被重复计算了，例如在逐头循环里计算完整的投影？",
}
