"""The operations of a replay script: the codes of the core's ScriptOp
(cpp/include/timerlab/workload.hpp), in one place for the script's builders."""

(OP_ARM, OP_CANCEL, OP_BUSY, OP_IDLE, OP_IRQ, OP_TICK, OP_DELAY, OP_DUTY, OP_EXIT, OP_WAKE_IRQ, OP_HR_ARM,
 OP_HR_CANCEL, OP_WAKE_PENDING) = range(13)
OP_NAMES = ["arm", "cancel", "busy_start", "idle_start", "external_irq", "tick_policy", "tick_delay", "jiffies_duty",
            "idle_exit", "wake_irq", "hrtimer_arm", "hrtimer_cancel", "wake_pending"]
# busy_start flags: the task was woken by the expiry of timer `key` (kScriptWokenByTimer), or of
# hrtimer `key` (kScriptWokenByHrtimer).
WOKEN_BY_TIMER, WOKEN_BY_HRTIMER = 1, 2
# tick_delay flags: the lateness of a stopped tick's programmed wakeup (kScriptStoppedTick).
WAKE_STOPPED = 1
