/*
 * What zephyr-module/build.rs hands to bindgen: the qfabric headers whose declarations the Rust
 * side calls or implements. None of them includes a Zephyr header.
 */
#include <qfabric/api.h>
#include <qfabric/executor.h>
#include <qfabric/executor_port.h>
#include <qfabric/port.h>
