# Runs PROGRAM MODE under `MPIEXEC -np 2` and passes when the job fails (a
# non-zero exit) and its output holds MESSAGE: a rank that throws must end
# the whole job with its message. A job that hangs is killed after TIMEOUT
# seconds and fails (the test's own CTest TIMEOUT is the backstop).
execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe --allow-run-as-root
          -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive ${PROGRAM} ${MODE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out
  TIMEOUT ${TIMEOUT})
message("${out}")
if(rc STREQUAL "0")
  message(FATAL_ERROR "the job exited 0: the throwing rank did not fail it")
elseif(rc MATCHES "timeout")
  message(FATAL_ERROR "the job did not end within ${TIMEOUT} s: a rank "
                      "waits for the one that threw (${rc})")
endif()
string(FIND "${out}" "${MESSAGE}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the job's output lacks the throwing rank's message "
                      "'${MESSAGE}'")
endif()
message("the job failed (exit ${rc}) with the rank's message, as it must")
