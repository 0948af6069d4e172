//! `qf-executor`: the persistent Linux executor process the agent spawns and feeds over a pipe
//! (stdin: requests, stdout: replies with compute trailers; see `qf_execution::wire`).
#![forbid(unsafe_code)]

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let (mut input, mut output) = (stdin.lock(), stdout.lock());
    if let Err(error) = qf_execution::executor::serve_stream(&mut input, &mut output) {
        eprintln!("qf-executor: {error}");
        std::process::exit(1);
    }
}
