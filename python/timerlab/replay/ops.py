"""The operations of a replay script: the codes of the core's ScriptOp
(cpp/include/timerlab/workload.hpp), in one place for the script's builders."""

OP_ARM, OP_CANCEL, OP_BUSY, OP_IDLE, OP_IRQ, OP_TICK, OP_DELAY, OP_DUTY = 0, 1, 2, 3, 4, 5, 6, 7
OP_NAMES = ["arm", "cancel", "busy_start", "idle_start", "external_irq", "tick_policy", "tick_delay", "jiffies_duty"]
# busy_start flags: the task was woken by the expiry of timer `key` (kScriptWokenByTimer).
WOKEN_BY_TIMER = 1
