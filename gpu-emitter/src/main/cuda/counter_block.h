// The counter block layout (io.collscope.counters.CounterBlock; README.md there has the table).
#pragma once
#define CB_OFF_SEQLOCK 16
#define CB_OFF_CPS 24
#define CB_OFF_CALLS 32   // then bytes, guard, copy, publish, wait, reduce, timeouts
#define CB_OFF_PEER_WAIT 96
// peer_arrived_last at 96 + 8W, histogram at 96 + 16W
