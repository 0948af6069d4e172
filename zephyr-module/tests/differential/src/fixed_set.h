/*
 * The set CONFIG_DIFFERENTIAL_FIXED runs: sets/seed-1083.toml (two periodic EDF tasks, one with
 * an offset, one with a constrained deadline, and a CBS serving four jobs; equal to qf sim on
 * native_sim), its schedule from
 *   qf sim sets/seed-1083.toml --golden-c src/golden_seed_1083.h
 */
#ifndef FIXED_SET_H_
#define FIXED_SET_H_

#include "golden_seed_1083.h"

#define FIXED_SET golden_seed_1083
/* The set has no admission_bound. */
#define FIXED_SET_ADMISSION_PPM (-1)

#endif /* FIXED_SET_H_ */
