//! One component process: started with its output appended to a log file, killed with
//! its parent (`PR_SET_PDEATHSIG`, so a test binary killed by a signal leaves nothing
//! behind), stopped on drop, and restartable with the same arguments.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

/// A running component.
#[derive(Debug)]
pub struct Process {
    pub name: String,
    program: PathBuf,
    args: Vec<OsString>,
    log: PathBuf,
    child: Option<Child>,
}

impl Process {
    /// Starts `program` with `args`, appending stdout and stderr to `log`.
    pub fn start(
        name: &str,
        program: &Path,
        args: Vec<OsString>,
        log: PathBuf,
    ) -> Result<Process, Error> {
        let mut process = Process {
            name: name.to_string(),
            program: program.to_path_buf(),
            args,
            log,
            child: None,
        };
        process.spawn()?;
        Ok(process)
    }

    fn spawn(&mut self) -> Result<(), Error> {
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .map_err(|e| {
                    Error::Start(
                        self.name.clone(),
                        format!("opening {}: {e}", self.log.display()),
                    )
                })
        };
        let (out, err) = (open()?, open()?);
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Components read no kubeconfig but the one they are given.
            .env_remove("KUBECONFIG");
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| {
            Error::Start(
                self.name.clone(),
                format!("{}: {e}", self.program.display()),
            )
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `Err` with the exit status and the log's tail when the process has exited.
    pub fn check_running(&mut self) -> Result<(), Error> {
        let Some(child) = self.child.as_mut() else {
            return Err(Error::Exited(
                self.name.clone(),
                "stopped".to_string(),
                String::new(),
            ));
        };
        match child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(Error::Exited(
                self.name.clone(),
                status.to_string(),
                self.log_tail(30),
            )),
            Err(e) => Err(Error::Exited(
                self.name.clone(),
                e.to_string(),
                self.log_tail(30),
            )),
        }
    }

    /// Sends `signal`, then waits up to `grace` for the exit and kills it after that.
    pub fn stop_with(&mut self, signal: i32, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(pid, signal);
            }
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// SIGTERM, then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        self.stop_with(libc::SIGTERM, Duration::from_secs(5));
    }

    /// Starts the same command again (after [`Process::stop`]).
    pub fn restart(&mut self) -> Result<(), Error> {
        self.stop();
        self.spawn()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}
