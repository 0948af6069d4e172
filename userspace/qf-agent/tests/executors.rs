//! The Linux executor as a persistent child over a pipe, the MCU endpoint over a Unix socket,
//! `qf run` and a short `qf profile` (host tier, real processes and sockets).

use qf_abi::MAX_FRAME_LEN;
use qf_agent::cli::profile::ProfileArgs;
use qf_agent::cli::run::RunArgs;
use qf_agent::cli::{ConditionArgs, McuArgs};
use qf_decision::model::DomainId;
use qf_execution::domain::{Domain, LinuxExecutor, McuSocket};
use qf_execution::load::Load;
use qf_execution::rt::{CallerPolicy, Scheduling};
use qf_execution::workload::{encode_request, outcome_ok, random_request};
use qf_tasks::Task;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::Duration;

fn executor() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_qf-executor"))
}

#[test]
fn one_persistent_executor_serves_many_calls_and_reports_compute() {
    let mut linux = LinuxExecutor::spawn(&executor(), Scheduling::Other).unwrap();
    let pid = linux.pid();
    let mut frame = [0u8; MAX_FRAME_LEN];
    for id in 1..=50u64 {
        let request = random_request(Task::FirX64, id);
        let len = encode_request(Task::FirX64, &request, id, 0, &mut frame).unwrap();
        let invocation = linux.invoke(&frame[..len]).unwrap();
        assert!(outcome_ok(Task::FirX64, &request, invocation.frame()).unwrap());
        let compute = invocation
            .compute
            .expect("the Linux executor reports compute");
        assert!(
            compute > Duration::ZERO && compute <= invocation.latency,
            "{compute:?} vs {:?}",
            invocation.latency
        );
    }
    assert_eq!(linux.pid(), pid, "the same process answered every call");
    // A repeated invocation id is answered DUPLICATE, not executed: the executor keeps state.
    let request = random_request(Task::FirX64, 50);
    let len = encode_request(Task::FirX64, &request, 50, 0, &mut frame).unwrap();
    let invocation = linux.invoke(&frame[..len]).unwrap();
    assert!(!outcome_ok(Task::FirX64, &request, invocation.frame()).unwrap());
}

#[test]
fn the_mcu_endpoint_speaks_the_same_frames_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcu.sock");
    let listener = UnixListener::bind(&path).unwrap();
    // The peer runs the same frame service the executor runs, on the socket.
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let (mut input, mut output) = (&stream, &stream);
        qf_execution::executor::serve_stream(&mut input, &mut output).unwrap()
    });
    let mut mcu = McuSocket::connect(&path, Duration::from_secs(5)).unwrap();
    assert_eq!(mcu.id(), DomainId::Mcu);
    let mut frame = [0u8; MAX_FRAME_LEN];
    for id in 1..=10u64 {
        let request = random_request(Task::Crc32, id);
        let len = encode_request(Task::Crc32, &request, id, 0, &mut frame).unwrap();
        assert!(outcome_ok(
            Task::Crc32,
            &request,
            mcu.invoke(&frame[..len]).unwrap().frame()
        )
        .unwrap());
    }
    drop(mcu);
    assert_eq!(server.join().unwrap(), 10);
}

#[test]
fn qf_run_prints_result_timings_and_the_reference_check() {
    let args = RunArgs {
        task: "add".into(),
        request: r#"{"a": 2, "b": 40}"#.into(),
        domain: DomainId::Linux,
        caller: CallerPolicy::Ordinary,
        mcu: McuArgs::default(),
        executor: Some(executor()),
    };
    let value = args.execute().unwrap();
    assert_eq!(value["result"]["value"], 42);
    assert_eq!(value["status"], "ok");
    assert_eq!(value["matches_reference"], true);
    assert!(value["latency_us"].as_f64().unwrap() >= value["compute_us"].as_f64().unwrap());
    let bad = RunArgs {
        request: r#"{"a": 2}"#.into(),
        ..args.clone()
    };
    assert!(format!("{:#}", bad.execute().unwrap_err()).contains("`b`"));
    let mcu = RunArgs {
        domain: DomainId::Mcu,
        ..args
    };
    assert!(format!("{:#}", mcu.clone().execute().unwrap_err()).contains("--mcu-dev [PATH]"));
    let missing = std::env::temp_dir().join(format!("qfabric-run-{}", std::process::id()));
    let kernel = RunArgs {
        mcu: McuArgs {
            mcu_dev: Some(Some(missing.clone())),
            ..McuArgs::default()
        },
        ..mcu
    };
    let error = format!("{:#}", kernel.execute().unwrap_err());
    assert!(error.contains(&*missing.to_string_lossy()), "{error}");
}

/// `qf run` and `qf profile` take `--mcu-dev` with or without a path, after the positionals.
#[test]
fn the_kernel_device_flag_parses_in_run_and_profile() {
    use clap::Parser;
    #[derive(Debug, Parser)]
    enum Qf {
        Run(RunArgs),
        Profile(ProfileArgs),
    }
    let run = |args: &[&str]| match Qf::try_parse_from(args) {
        Ok(Qf::Run(run)) => Ok(run.mcu.endpoint().unwrap()),
        Ok(other) => panic!("{other:?}"),
        Err(error) => Err(error.to_string()),
    };
    let kernel = |path: Option<&str>| {
        Ok(Some(qf_execution::domain::McuEndpoint::Kernel(
            path.map(PathBuf::from),
        )))
    };
    assert_eq!(
        run(&["qf", "run", "add", "{}", "--domain", "mcu", "--mcu-dev"]),
        kernel(None)
    );
    assert_eq!(
        run(&["qf", "run", "--mcu-dev=/dev/qfabric2", "add", "{}"]),
        kernel(Some("/dev/qfabric2"))
    );
    let both = run(&["qf", "run", "add", "{}", "--mcu-rpmsg", "--mcu-dev"]).unwrap_err();
    assert!(
        both.contains("--mcu-rpmsg") && both.contains("--mcu-dev"),
        "{both}"
    );
    match Qf::try_parse_from(["qf", "profile", "--out", "o", "--mcu-dev", "/dev/qfabric0"]) {
        Ok(Qf::Profile(profile)) => assert_eq!(
            profile.mcu.endpoint().unwrap(),
            kernel(Some("/dev/qfabric0")).unwrap()
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_short_profile_keeps_raw_observations_and_writes_traces() {
    let dir = tempfile::tempdir().unwrap();
    let args = ProfileArgs {
        out: dir.path().to_owned(),
        tasks: vec!["add".into(), "fir_x1".into()],
        domains: vec![DomainId::Linux],
        conditions: ConditionArgs {
            loads: vec![Load::Idle, Load::Cpu { workers: 1 }],
            callers: vec![CallerPolicy::Ordinary, CallerPolicy::Fifo],
        },
        warmup: 10,
        samples: 60,
        min_samples: 50,
        mcu: McuArgs::default(),
        executor: Some(executor()),
        seed: 3,
        quiet: true,
    };
    let summaries = match args.spec().unwrap().run() {
        Ok(summaries) => summaries,
        // Without CAP_SYS_NICE the FIFO caller must fail with the explanation.
        Err(error) => {
            assert!(format!("{error:#}").contains("CAP_SYS_NICE"), "{error:#}");
            return;
        }
    };
    assert_eq!(summaries.len(), 2 * 2 * 2);
    assert!(summaries
        .iter()
        .all(|s| s.samples == 60 && s.valid && s.wrong_outputs == 0));
    let raw =
        std::fs::read_to_string(dir.path().join("profile/cpu/fifo/observations.csv")).unwrap();
    assert_eq!(
        raw.lines().count(),
        1 + 2 * 60,
        "warm-up excluded, every kept sample raw"
    );
    assert!(raw.starts_with("task,domain,load,caller,request_id,latency_us,compute_us,ok"));
    let trace =
        qf_evidence::traces::Trace::load(&dir.path().join("traces/idle/ordinary/add.linux.csv"))
            .unwrap();
    assert_eq!(trace.samples.len(), 60);
    // The report regenerates the Eq. 1 decomposition from the raw observations alone.
    let report = qf_agent::cli::report::ReportArgs {
        dir: dir.path().to_owned(),
        resamples: 100,
        block: 50,
        seed: 1,
        quiet: true,
    };
    report.run().unwrap();
    let decomposition =
        std::fs::read_to_string(dir.path().join("report/decomposition.csv")).unwrap();
    assert_eq!(
        decomposition.lines().count(),
        1 + 2,
        "add and fir_x1 on linux"
    );
    assert!(
        decomposition.lines().skip(1).all(|l| !l.contains("n/a")),
        "{decomposition}"
    );
}
