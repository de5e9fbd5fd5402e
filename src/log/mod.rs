//! Launch logs (SPEC §7, §8): reading, writing and the replay report.
