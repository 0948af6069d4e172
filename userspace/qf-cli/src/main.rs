//! `qf`: the qfabric command line. A thin dispatcher — each subcommand's arguments (a clap
//! `Args` struct) and its `run` live in the library crate that implements it; add a variant
//! here and one match arm, nothing more.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "qf",
    version,
    about = "qfabric: real-time plumbing for Linux + MCU boards"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a task set under periodic EDF + per-thread CBS (qf-sched) and write the
    /// schedule, event trace, Gantt chart and summary.
    Sim(qf_sim::cli::SimArgs),
    /// Differential testing against `qf sim`: generate task sets, compare event logs, shrink a
    /// set on which another run's log mismatches.
    Differential(qf_differential::cli::DifferentialArgs),
    /// Run one invocation of a declared task in a domain and print result and timings.
    Run(qf_agent::cli::run::RunArgs),
    /// Profile tasks per domain × load × caller: raw observations and traces.
    Profile(qf_agent::cli::profile::ProfileArgs),
    /// Ordered trace replay of a chain under a placement policy (guarded recovery included).
    Replay(qf_agent::cli::replay::ReplayArgs),
    /// A resident chain (the paper's Section VIII-A): its template request, and its results
    /// observed from Linux per load × caller.
    Resident(qf_agent::cli::resident::ResidentArgs),
    /// Run the evaluation grid and the hysteresis ablation, writing raw results.
    Evaluate(qf_agent::cli::evaluate::EvaluateArgs),
    /// Regenerate every table and plot of a campaign directory from its raw records.
    Report(qf_agent::cli::report::ReportArgs),
    /// Ask a running qfabricd for placements, window miss rates, controller state and decisions.
    Status(qf_agent::cli::status::StatusArgs),
    /// Wire ABI v1 tools: decode/encode frames, check declarations, generate Rust and C.
    Abi(qf_decl::cli::AbiArgs),
    /// Firmware tools: check a remoteproc ELF and its resource table as Linux will load it.
    Firmware(qf_firmware::cli::FirmwareArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version, which go to standard output as clap writes them.
        Err(error) if !error.use_stderr() => error.exit(),
        Err(error) => {
            // clap echoes the argument it refuses: a 100 KB one is shown cut.
            let message = error.render().to_string();
            eprint!("{}", qf_execution::shown::shown_quoted(&message, '\''));
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let result = match &cli.command {
        Command::Sim(args) => qf_sim::cli::run(args),
        Command::Differential(args) => qf_differential::cli::run(args),
        Command::Run(args) => args.run(),
        Command::Profile(args) => args.run(),
        Command::Replay(args) => args.run(),
        Command::Resident(args) => args.run(),
        Command::Evaluate(args) => args.run(),
        Command::Report(args) => args.run(),
        Command::Status(args) => args.run(),
        Command::Abi(args) => qf_decl::cli::run(args),
        Command::Firmware(args) => qf_firmware::cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_closed_pipe(&error) => ExitCode::from(CLOSED_PIPE_STATUS),
        Err(error) => {
            eprintln!("qf: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Exit status when the reader of standard output went away (`qf ... | head`): 128 + SIGPIPE,
/// what a shell shows for a program the signal ended.
const CLOSED_PIPE_STATUS: u8 = 141;

/// True when `error` comes from writing to a closed standard output: the reader stopped
/// reading, which deserves no message. Every subcommand gets this by writing its standard output
/// with `writeln!(std::io::stdout().lock(), ..)?` (`println!` panics instead) and returning the
/// `io::Error` in its `anyhow` chain. A broken pipe elsewhere (the MCU's socket closed under
/// `qf profile`) is an ordinary error: standard output itself must have lost its reader.
fn is_closed_pipe(error: &anyhow::Error) -> bool {
    let broken_pipe = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    broken_pipe && stdout_has_no_reader()
}

/// Whether standard output is a pipe or socket whose reading end is gone (Linux polls the writing
/// end of such a pipe as `POLLERR`, a socket as `POLLHUP` or `POLLERR`).
fn stdout_has_no_reader() -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(
        std::os::fd::AsFd::as_fd(&stdout),
        PollFlags::POLLOUT,
    )];
    poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP))
}
