"""Chinese for gradient and stability checks (see zh.py)."""
MESSAGES = {
    # ---------------------------------------------------------------- check titles
    "Gradients w.r.t. x, W_Q, W_K, W_V and W_O match the reference's (float64), and gradcheck passes":
        "对 x、W_Q、W_K、W_V 和 W_O 的梯度与参考实现一致（float64），且通过 gradcheck",
    "Both modules: gradients w.r.t. x and every parameter match the reference's (float64), and gradcheck passes":
        "两个模块：对 x 和每个参数的梯度与参考实现一致（float64），且通过 gradcheck",
    "Large-magnitude X (scores in the thousands), float64 and float32: no NaN or inf, values still right":
        "X 数值很大（分数达到几千），float64 和 float32：没有 NaN 或 inf，数值依然正确",
    "No overflow when scores reach the thousands, float64 and float32, both modules: out and attn_weights finite, "
    "values right":
        "分数达到几千时不溢出，float64 和 float32，两个模块：out 和 attn_weights 均为有限值，数值正确",
    "No overflow when scores reach the thousands, float64 and float32: out and weights finite, values right":
        "分数达到几千时不溢出，float64 和 float32：out 和 weights 均为有限值，数值正确",
    "On CUDA, float16: results stay float16 on the GPU, match the reference and survive large scores":
        "在 CUDA 上，float16：结果保持为 GPU 上的 float16，与参考实现一致，分数很大时也不出问题",
    "On CUDA, bfloat16: results stay bfloat16 on the GPU, match the reference and survive large scores":
        "在 CUDA 上，bfloat16：结果保持为 GPU 上的 bfloat16，与参考实现一致，分数很大时也不出问题",
    "On CUDA, float16: both modules keep float16 on the GPU, match the reference and survive large scores":
        "在 CUDA 上，float16：两个模块在 GPU 上保持 float16，与参考实现一致，分数很大时也不出问题",
    "On CUDA, bfloat16: both modules keep bfloat16 on the GPU, match the reference and survive large scores":
        "在 CUDA 上，bfloat16：两个模块在 GPU 上保持 bfloat16，与参考实现一致，分数很大时也不出问题",

    # ---------------------------------------------------------------- the misconception detached-graph
    "your forward values are right, but the autograd graph is cut: no gradient reaches some inputs or parameters.":
        "你的前向结果是对的，但自动求导的计算图被切断了：梯度到达不了某些输入或参数。",
    ".detach(), .data, .item(), a round trip through numpy or a torch.no_grad() block give values without their "
    "history, so backward() stops there and training would never update what lies before it.":
        ".detach()、.data、.item()、经由 numpy 转一圈或 torch.no_grad() 代码块得到的值不带计算历史，"
        "所以 backward() 到那里就停了，训练永远不会更新它之前的东西。",
    "keep every step a torch operation on the tensors themselves (x / math.sqrt(d), torch.softmax, @); use "
    ".detach() and .item() only for printing or plotting.":
        "每一步都用作用在张量本身上的 torch 运算（x / math.sqrt(d)、torch.softmax、@）；"
        ".detach() 和 .item() 只在打印或画图时使用。",

    # ---------------------------------------------------------------- gradient messages
    "a .detach(), .data, .item() or .tolist(), a numpy round trip (.numpy() then torch.from_numpy) or a "
    "torch.no_grad() block":
        ".detach()、.data、.item() 或 .tolist()、经由 numpy 转一圈（先 .numpy() 再 torch.from_numpy）或 torch.no_grad() 代码块",
    "B={b}, T={t}, d_model={d}": "B={b}，T={t}，d_model={d}",
    "B={b}, T={t}, d_model={d}, {h} heads": "B={b}，T={t}，d_model={d}，{h} 个头",
    "Backpropagating through {what} raised {type}: {message}": "对 {what} 做反向传播时抛出了 {type}：{message}",
    "None": "没有梯度，None",
    "all zero": "全为零",
    "{name} ({state})": "{name}（{state}）",
    "the derivative of {output} with respect to {input}": "{output} 对 {input} 的导数",
    "malformed gradcheck reply": "gradcheck 的回复格式不正确",
    "malformed gradients": "梯度的格式不正确",
    "malformed list of names": "名称列表的格式不正确",
    "A finite-difference gradient check (gradcheck's fast mode) could not run your code on a small float64 case ({small}): it raised {type}: "
    "{message}":
        "有限差分梯度检查（gradcheck 的快速模式）无法在一个小的 float64 用例（{small}）上运行你的代码：它抛出了 {type}：{message}",
    "A finite-difference gradient check (gradcheck's fast mode) on a small float64 case ({small}): your backward pass does not agree with finite "
    "differences of your own forward ({detail}). A custom autograd.Function whose backward is wrong, or a cut "
    "graph, does that.":
        "在一个小的 float64 用例（{small}）上运行有限差分梯度检查（gradcheck 的快速模式）：你的反向传播与你自己前向计算的有限差分"
        "不一致（{detail}）。backward 写错的自定义 autograd.Function，或者被切断的计算图，都会这样。",
    "A finite-difference gradient check (gradcheck's fast mode) finds your backward pass consistent with your own forward: fixing the forward "
    "values should fix the gradients too.":
        "有限差分梯度检查（gradcheck 的快速模式）认为你的反向传播与你自己的前向计算一致：把前向结果改对，梯度应该也会随之正确。",
    "Your forward values are right, so the backward pass is what differs: part of the graph may be cut ({hint}), "
    "or a custom autograd.Function's backward may be wrong.":
        "你的前向结果是对的，所以不同之处在反向传播：可能有一部分计算图被切断了（{hint}），"
        "也可能是自定义 autograd.Function 的 backward 写错了。",
    "{what} changed {names} in place (an in-place operation such as `x /= ...`, `x.mul_(...)` or `x[...] = ...`, "
    "or a write through .data). The caller, and autograd, may still need the original values: compute new "
    "tensors instead.":
        "{what} 原地修改了 {names}（原地操作，例如 `x /= ...`、`x.mul_(...)` 或 `x[...] = ...`，或者通过 .data "
        "写入）。调用者和自动求导可能还需要原来的值：请改为计算新的张量。",
    "{what}: no gradient flows back to {names}, though the expected gradient is not zero: did {hint} cut the "
    "graph between them and the outputs?":
        "{what}：没有梯度流回 {names}，而期望的梯度并不为零：是不是{hint}切断了它们和输出之间的计算图？",
    "{what}: no gradient flows back to {names}, though the expected gradient is not zero: does your forward use "
    "them at all? If it does, {hint} cuts the graph on the way.":
        "{what}：没有梯度流回 {names}，而期望的梯度并不为零：你的前向计算用到它们了吗？"
        "如果用到了，那就是{hint}在途中切断了计算图。",
    "{what}: the gradient w.r.t. {name} differs from the expected one in {n} of {total} values (tolerance "
    "rtol={rtol:g}, atol={atol:g}, float64). Worst at index {index}: expected {expected:.6g}, got {got:.6g}.":
        "{what}：对 {name} 的梯度在 {total} 个值中有 {n} 个与期望不同（容差 rtol={rtol:g}，atol={atol:g}，"
        "float64）。差得最多的在索引 {index}：期望 {expected:.6g}，得到 {got:.6g}。",
    "{what}: the gradient w.r.t. {name} has shape {got}; expected {shape}.":
        "{what}：对 {name} 的梯度形状是 {got}；期望是 {shape}。",
    "{what}: the gradients w.r.t. {names} differ from the expected ones too.":
        "{what}：对 {names} 的梯度也与期望不同。",
    "{what}: your forward values already differ from the expected ones (the numbers checks say where): fix "
    "those first. The gradients are compared with the reference's, so they differ too.":
        "{what}：你的前向结果本身就与期望不同（数值检查会指出在哪里）：请先改正它们。"
        "梯度是和参考实现的梯度比较的，所以它们也会不同。",
    "{what}: {names} has requires_grad=False, so it gets no gradient and training would never change it. Leave "
    "the parameters of nn.Linear trainable.":
        "{what}：{names} 的 requires_grad=False，所以它得不到梯度，训练也永远不会改变它。"
        "请让 nn.Linear 的参数保持可训练。",
    "{what}: {outputs} does not require grad although every input does: the graph from the inputs to it is cut. "
    "Did {hint} come between them?":
        "{what}：每个输入都需要梯度，{outputs} 却不需要梯度：从输入到它的计算图被切断了。"
        "它们之间是不是有{hint}？",

    "{what} turns a tensor that requires grad into a numpy array, which torch refuses ({error}): numpy values "
    "have no autograd history, so no gradient could flow back through them. Keep every step in torch.":
        "{what} 把一个需要梯度的张量转成了 numpy 数组，torch 拒绝这样做（{error}）：numpy 的值没有自动求导的历史，"
        "梯度无法经由它们流回。请让每一步都留在 torch 里。",

    # ---------------------------------------------------------------- stability messages
    "self_attention gave NaN or inf for large inputs in {dtype}.":
        "对于 {dtype} 的大数值输入，self_attention 给出了 NaN 或 inf。",
    "The largest scores here are about {largest}; exp() of more than {limit} overflows {dtype}. torch.softmax, "
    "or subtracting each row's maximum before exp(), avoids that.":
        "这里最大的分数约为 {largest}；在 {dtype} 中 exp() 的参数超过 {limit} 就会溢出。"
        "使用 torch.softmax，或者在 exp() 之前减去每一行的最大值，就能避免。",
}
