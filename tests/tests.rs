//! Process tests: each binary run as users run it, through assert_cmd, pipes and pseudo-terminals.

mod util;

mod gate;
