# The resume recipe (docs/checkpoints.md, "## A run that resumes"), run as a user
# would: once straight through, and once stopped after its checkpoint at
# step 100 (STOPPED: the same program with its loop ending at 150) and run
# again, resuming from it. The two final checkpoints must hold the same
# values bit for bit (h5py compares every dataset and attribute; the files'
# bytes differ by HDF5's timestamps).
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/straight ${WORK_DIR}/resumed)
foreach(step "straight|${PROGRAM}" "resumed|${STOPPED}" "resumed|${PROGRAM}")
  string(REPLACE "|" ";" step "${step}")
  list(GET step 0 dir)
  list(GET step 1 program)
  execute_process(COMMAND ${program} WORKING_DIRECTORY ${WORK_DIR}/${dir}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} in ${dir}/ failed: ${rc}")
  endif()
endforeach()
execute_process(COMMAND /usr/bin/python3 -c "import h5py" RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message("SKIPPED: the comparison needs Debian's python3-h5py")
  return()
endif()
execute_process(COMMAND /usr/bin/python3 -c "
import sys, h5py, numpy as np
a, b = (h5py.File(sys.argv[i], 'r') for i in (1, 2))
bad = []
def same(x, y, name):
    if set(x.attrs) != set(y.attrs) or any(
            not np.array_equal(x.attrs[k], y.attrs[k]) for k in x.attrs):
        bad.append(name + ' (attributes)')
    if isinstance(x, h5py.Dataset):
        if not np.array_equal(x[()], y[()]):
            bad.append(name)
        return
    if set(x) != set(y):
        bad.append(name + ' (members)')
    for k in set(x) & set(y):
        same(x[k], y[k], name + '/' + k)
same(a, b, '')
print('differ:', bad) if bad else print('the same values bit for bit')
sys.exit(1 if bad else 0)
" ${WORK_DIR}/straight/run.h5 ${WORK_DIR}/resumed/run.h5 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the resumed run did not end as the straight one")
endif()
