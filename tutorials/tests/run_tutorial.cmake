# Runs a tutorial for a few steps and checks what it printed and wrote.
#   MODE=run:    30 steps of batch 32; the loss goes down, the checkpoint
#                and the CSV are written.
#   MODE=resume: 20 steps, then --resume to 40, against a straight 40-step
#                run: the same final loss, weights, loss scale and CSV.
#   MODE=updater: tutorial 00's loop against its --updater form (the plain
#                updater): the same weights; accumulation and clipping run.
#   MODE=in_backward: tutorial 02's loop against its --in-backward form:
#                the same weights, a lower peak memory.
#   MODE=explain: tutorial 05 names the function of the first overflow.
#   MODE=main:   the main job for 20 steps per type_config: its table (with
#                the accuracies of the last weights) and files; --resume
#                then finds every run finished.
#   MODE=convert: tutorial 06's converted models: half the file size, the
#                accuracy within a point of float's.
#   MODE=main_ranks: the main job on 2 ranks (LAUNCHER: mpirun and its
#                flags): the table with the all-reduce; 20 steps, then
#                --resume to 40 from rank 0's checkpoints, against a
#                straight 40-step run: the same weights; the loss printed is
#                the mean over the ranks.
#   MODE=help:   --help says what the flags' defaults are.
#   MODE=diverge: tutorial 02 at a loss scale that overflows: exit status 1
#                and no test accuracy for its nan weights.
# Prints "SKIPPED: ..." (the test's skip pattern) when Fashion-MNIST is not
# installed.
cmake_minimum_required(VERSION 3.22)
# LAUNCHER comes as one argument, its words separated by "|".
string(REPLACE "|" ";" LAUNCHER "${LAUNCHER}")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs the tutorial with `args` (under LAUNCHER, with --batch-size `batch`,
# 32 unless set); sets <prefix>_output and <prefix>_errors to what it
# printed on stdout and stderr, and <prefix>_<key> for each key=value of its
# (first) RESULT line.
function(run_tutorial prefix)
  if(NOT batch)  # the caller's, else 32
    set(batch 32)
  endif()
  execute_process(COMMAND ${LAUNCHER} ${TUTORIAL} --batch-size ${batch} --log-every 10 ${ARGN}
    WORKING_DIRECTORY ${WORK_DIR}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${LAUNCHER} ${TUTORIAL} --batch-size ${batch} --log-every 10 ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    if("${out}${err}" MATCHES "apt-get install dataset-fashion-mnist")
      message("SKIPPED: Fashion-MNIST is not installed "
              "(apt-get install dataset-fashion-mnist)")
      # Stop the whole script without failing.
      cmake_language(EXIT 0)
    endif()
    message(FATAL_ERROR "exit status ${rc}")
  endif()
  set(${prefix}_output "${out}" PARENT_SCOPE)
  set(${prefix}_errors "${err}" PARENT_SCOPE)
  string(REGEX MATCH "RESULT [^\n]*" result "${out}")
  if(NOT result)
    message(FATAL_ERROR "no RESULT line")
  endif()
  string(REPLACE " " ";" fields "${result}")
  foreach(field ${fields})
    if(field MATCHES "^([a-z_]+)=(.*)$")
      set(${prefix}_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

function(expect_equal what a b)
  if(NOT "${a}" STREQUAL "${b}")
    message(FATAL_ERROR "${what}: ${a} != ${b}")
  endif()
endfunction()

if(MODE STREQUAL "run")
  run_tutorial(r --iterations 30 --checkpoint run.ckpt.h5 --csv run.csv)
  expect_equal("steps" "${r_steps}" 30)
  # The mean loss of the last 10 steps is well below the first 10's (about
  # 2.1 -> 1.0 for this LeNet and Adam).
  # (math() has no floats: compare in thousandths.)
  foreach(v first last)
    set(x "${r_${v}_loss}000")
    if(NOT x MATCHES "^([0-9]+)\\.([0-9][0-9][0-9])")
      message(FATAL_ERROR "${v}_loss is not a number: ${r_${v}_loss}")
    endif()
    math(EXPR ${v}_milli "${CMAKE_MATCH_1} * 1000 + ${CMAKE_MATCH_2}")
  endforeach()
  math(EXPR limit "${first_milli} * 4 / 5")
  if(NOT last_milli LESS limit)
    message(FATAL_ERROR
            "the loss did not go down: ${r_first_loss} -> ${r_last_loss}")
  endif()
  if(NOT EXISTS ${WORK_DIR}/run.ckpt.h5)
    message(FATAL_ERROR "no checkpoint at ${WORK_DIR}/run.ckpt.h5")
  endif()
  file(STRINGS ${WORK_DIR}/run.csv rows)
  list(LENGTH rows n)
  expect_equal("CSV rows (header and 30 steps)" ${n} 31)
  message("loss ${r_first_loss} -> ${r_last_loss}; checkpoint and CSV written")
elseif(MODE STREQUAL "resume")
  # A high initial scale and a short interval make the scaler back off and
  # grow within 40 steps, so its state matters.
  set(scaling --loss-scale 65536 --interval 5)
  run_tutorial(a --iterations 20 --checkpoint a.h5 --csv a.csv ${scaling})
  run_tutorial(a --iterations 40 --checkpoint a.h5 --csv a.csv --resume
               ${scaling})
  run_tutorial(b --iterations 40 --checkpoint b.h5 --csv b.csv ${scaling})
  expect_equal("steps" "${a_steps}" 40)
  expect_equal("final loss" "${a_final_loss}" "${b_final_loss}")
  expect_equal("weights" "${a_weights_hash}" "${b_weights_hash}")
  expect_equal("skipped steps" "${a_skipped_steps}" "${b_skipped_steps}")
  expect_equal("loss scale" "${a_loss_scale}" "${b_loss_scale}")
  file(READ ${WORK_DIR}/a.csv a_csv)
  file(READ ${WORK_DIR}/b.csv b_csv)
  expect_equal("CSV curves" "${a_csv}" "${b_csv}")
  if(b_skipped_steps EQUAL 0)
    message(FATAL_ERROR "no step was skipped: the scaler's state went untested")
  endif()
  message("resumed run = straight run: final loss ${a_final_loss}, weights "
          "${a_weights_hash}, ${a_skipped_steps} skipped steps")
elseif(MODE STREQUAL "updater")
  # Tutorial 00's loop and its --updater form (the plain updater) take the
  # same 20 steps, bit for bit; accumulation and clipping change them.
  run_tutorial(loop --iterations 20 --checkpoint loop.h5)
  run_tutorial(plain --iterations 20 --checkpoint plain.h5 --updater)
  expect_equal("steps" "${plain_steps}" 20)
  expect_equal("skipped steps" "${plain_skipped_steps}" 0)
  expect_equal("weights (loop vs plain updater)" "${loop_weights_hash}"
               "${plain_weights_hash}")
  run_tutorial(clip --iterations 20 --checkpoint clip.h5 --updater
               --accum-grad 2 --clip-grad-norm 0.5)
  expect_equal("steps" "${clip_steps}" 20)
  if(clip_weights_hash STREQUAL plain_weights_hash)
    message(FATAL_ERROR "--accum-grad 2 --clip-grad-norm 0.5 changed nothing")
  endif()
  message("the plain updater took the loop's steps (weights "
          "${plain_weights_hash}); with accumulation and clipping: "
          "${clip_weights_hash}")
elseif(MODE STREQUAL "in_backward")
  # Tutorial 02's loop and its --in-backward form take the same 20 steps,
  # bit for bit, the second holding fewer grads at once.
  run_tutorial(after --iterations 20 --checkpoint after.h5)
  run_tutorial(inside --iterations 20 --checkpoint inside.h5 --in-backward)
  expect_equal("steps" "${inside_steps}" 20)
  expect_equal("weights (update after backward vs inside it)"
               "${after_weights_hash}" "${inside_weights_hash}")
  if(NOT inside_peak_memory_mib LESS after_peak_memory_mib)
    message(FATAL_ERROR "--in-backward peaked at ${inside_peak_memory_mib} "
            "MiB, not below ${after_peak_memory_mib}")
  endif()
  message("the update inside backward took the same steps (weights "
          "${inside_weights_hash}) at ${inside_peak_memory_mib} MiB instead "
          "of ${after_peak_memory_mib}")
elseif(MODE STREQUAL "explain")
  # Tutorial 05 at 2^24: the first step overflows, and the guard names the
  # function where the inf started, in backward, with the loss scale.
  run_tutorial(e --iterations 5 --checkpoint e.h5)
  foreach(part "step 1 skipped; under CheckFiniteGuard:"
          "[check_finite] " " backward: the grad of input "
          "the overflow started here"
          "backward was seeded with 1.67772e+07 (the loss scale)")
    string(FIND "${e_output}" "${part}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "tutorial 05 did not print '${part}'")
    endif()
  endforeach()
  message("the guard named where the first skipped step's inf started")
elseif(MODE STREQUAL "main")
  set(args --iterations 20 --type-configs float,half,bfloat16 --out-dir out)
  run_tutorial(m ${args})
  if(NOT m_output MATCHES "type_config test accuracy")
    message(FATAL_ERROR "no results table")
  endif()
  foreach(f float.ckpt.h5 half.ckpt.h5 bfloat16.ckpt.h5 float.csv half.csv
            bfloat16.csv curves.csv results.csv)
    if(NOT EXISTS ${WORK_DIR}/out/${f})
      message(FATAL_ERROR "the main job did not write out/${f}")
    endif()
  endforeach()
  file(STRINGS ${WORK_DIR}/out/results.csv rows)
  list(LENGTH rows n)
  expect_equal("results.csv rows (header and 3 runs)" ${n} 4)
  file(STRINGS ${WORK_DIR}/out/curves.csv rows)
  list(LENGTH rows n)
  expect_equal("curves.csv rows (header and 20 steps)" ${n} 21)
  # 20 steps end within the first epoch: each run is tested on its last
  # weights, so the table shows accuracies, not nan (issue 39).
  if(m_output MATCHES "nan%")
    message(FATAL_ERROR "the table shows a test accuracy of nan")
  endif()
  if(NOT m_test_accuracy MATCHES "^[0-9]+\\.[0-9]+$")
    message(FATAL_ERROR "test_accuracy=${m_test_accuracy}: no test ran")
  endif()
  run_tutorial(again ${args} --resume)
  string(REGEX MATCHALL "resumed from [^\n]* at step 20 " resumed "${again_output}")
  list(LENGTH resumed n)
  expect_equal("runs resumed at step 20" ${n} 3)
  expect_equal("weights after --resume" "${again_weights_hash}"
               "${m_weights_hash}")
  # The checkpoints kept the accuracies: the finished runs are not tested
  # again, and the table shows the same numbers.
  expect_equal("test accuracy after --resume" "${again_test_accuracy}"
               "${m_test_accuracy}")
  if(again_output MATCHES "test accuracy [0-9.]+% after step")
    message(FATAL_ERROR "--resume tested the finished runs again")
  endif()
  # gnuplot plots the curves of a short run without a warning: a loss scale
  # that never moved (20 steps), a single step (an empty x and y range).
  find_program(gnuplot gnuplot)
  if(gnuplot)
    run_tutorial(one --iterations 1 --type-configs half --out-dir one)
    foreach(run m again one)
      if("${${run}_errors}" MATCHES "[Ww]arning[^\n]*")
        message(FATAL_ERROR "gnuplot warned: ${CMAKE_MATCH_0}")
      endif()
    endforeach()
    foreach(png out/curves.png one/curves.png)
      if(NOT EXISTS ${WORK_DIR}/${png})
        message(FATAL_ERROR "the main job did not plot ${png}")
      endif()
    endforeach()
  else()
    message("gnuplot is not installed: the plot went untested")
  endif()
  message("the main job wrote its table, curves and checkpoints, and resumed")
elseif(MODE STREQUAL "convert")
  # Tutorial 06 after 30 steps: each converted model's file is about half
  # the float one's, and its test accuracy within 1 point of float's.
  run_tutorial(c --iterations 30 --out-dir out)
  foreach(model half bfloat16)
    string(REGEX MATCH "RESULT model=${model} test_accuracy=[0-9.]+ vs_float=(-?[0-9]+)\\.([0-9]+) size_ratio=0\\.([0-9]+)"
           line "${c_output}")
    if(NOT line)
      message(FATAL_ERROR "no RESULT line for ${model}")
    endif()
    set(points "${CMAKE_MATCH_1}")  # if(MATCHES) resets CMAKE_MATCH_<n>
    set(ratio "${CMAKE_MATCH_3}")
    if(NOT points MATCHES "^-?0$")
      message(FATAL_ERROR "${model}: accuracy moved by more than 1 point: ${line}")
    endif()
    if(NOT ratio MATCHES "^(4[89]|5[0-4])")
      message(FATAL_ERROR "${model}: the file is not about half the size: ${line}")
    endif()
  endforeach()
  # Its ONNX models (where the library has ONNX), read back by load_onnx:
  # the same accuracy as the YAML + HDF5 model of the same type, and the
  # fp16 one about half the float one's size.
  if(c_output MATCHES "RESULT onnx=")
    foreach(model float half bfloat16)
      string(REGEX MATCH "RESULT onnx=${model} test_accuracy=([0-9.]+) size_ratio=0*([0-9]*)\\.([0-9]+)"
             line "${c_output}")
      if(NOT line)
        message(FATAL_ERROR "no RESULT onnx line for ${model}")
      endif()
      set(acc "${CMAKE_MATCH_1}")
      set(ratio "${CMAKE_MATCH_3}")
      if(model STREQUAL "float")
        string(REGEX MATCH "float +([0-9.]+)%" fline "${c_output}")
        set(want "${CMAKE_MATCH_1}")
      else()
        string(REGEX MATCH "RESULT model=${model} test_accuracy=([0-9.]+)"
               mline "${c_output}")
        set(want "${CMAKE_MATCH_1}")
        if(NOT ratio MATCHES "^(4[5-9]|5[0-9])")
          message(FATAL_ERROR "${model} ONNX: not about half the size: ${line}")
        endif()
      endif()
      expect_equal("ONNX ${model} accuracy" "${acc}" "${want}")
    endforeach()
    message("tutorial 06's ONNX models score as the converted ones")
  endif()
  message("tutorial 06 converted the model: half the size, the same accuracy")
elseif(MODE STREQUAL "main_ranks")
  set(args --ranks --type-configs float,half --bucket-mb 0.5)
  run_tutorial(a ${args} --iterations 20 --out-dir a)
  if(NOT a_output MATCHES "data-parallel: 2 ranks" OR
     NOT a_output MATCHES "all-reduce not hidden")
    message(FATAL_ERROR "no data-parallel header or all-reduce table")
  endif()
  run_tutorial(a2 ${args} --iterations 40 --out-dir a --resume)
  string(REGEX MATCHALL "resumed from [^\n]* at step 20 " resumed "${a2_output}")
  list(LENGTH resumed n)
  expect_equal("runs resumed at step 20" ${n} 2)
  run_tutorial(b ${args} --iterations 40 --out-dir b)
  # The RESULT line is the first run's (float); the hash covers its weights.
  expect_equal("float weights after --resume on 2 ranks" "${a2_weights_hash}"
               "${b_weights_hash}")
  string(REGEX MATCHALL "weights_hash=[0-9a-f]+" a2_hashes "${a2_output}")
  string(REGEX MATCHALL "weights_hash=[0-9a-f]+" b_hashes "${b_output}")
  expect_equal("every run's weights after --resume" "${a2_hashes}" "${b_hashes}")
  # The loss printed is the mean over the ranks (issue 39): at step 1 (the
  # same initial weights) 2 ranks of 32 images print the loss one process
  # prints for the same 64 images; rank 0's own is of its 32 alone.
  # --no-overlap turns the overlap off.
  run_tutorial(two --ranks --type-configs float --bucket-mb 0.5
               --iterations 1 --no-overlap --out-dir two)
  if(NOT two_output MATCHES "fp32\\) in buckets of [0-9.]+ MB after backward")
    message(FATAL_ERROR "--no-overlap did not turn the overlap off")
  endif()
  set(ranks_launcher "${LAUNCHER}")
  set(LAUNCHER "")
  set(batch 64)
  run_tutorial(one --type-configs float --iterations 1 --out-dir one)
  set(LAUNCHER "${ranks_launcher}")
  unset(batch)
  # Within 5e-6 (the sums run in another order): compare in millionths.
  foreach(run two one)
    set(x "${${run}_final_loss}000000")
    if(NOT x MATCHES "^([0-9]+)\\.([0-9][0-9][0-9][0-9][0-9][0-9])")
      message(FATAL_ERROR "final_loss is not a number: ${${run}_final_loss}")
    endif()
    math(EXPR ${run}_micro "${CMAKE_MATCH_1} * 1000000 + ${CMAKE_MATCH_2}")
  endforeach()
  math(EXPR diff "${two_micro} - ${one_micro}")
  if(diff GREATER 5 OR diff LESS -5)
    message(FATAL_ERROR "2 ranks printed loss ${two_final_loss}, not the "
            "global batch's ${one_final_loss}")
  endif()
  message("the main job trained on 2 ranks, printed the ranks' mean loss "
          "and resumed from rank 0's checkpoints")
elseif(MODE STREQUAL "help")
  execute_process(COMMAND ${TUTORIAL} --help RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${TUTORIAL} --help\n${out}${err}")
  expect_equal("exit status of --help" "${rc}" 0)
  # CLI11 shows a negated flag as "--overlap,--no-overlap{false}", which
  # reads as "off by default" (issue 39).
  if(out MATCHES "[^\n]*{(true|false)}[^\n]*")
    message(FATAL_ERROR "--help shows a flag's value as a default: ${CMAKE_MATCH_0}")
  endif()
  if(NOT out MATCHES "\n  --overlap[^\n]*(\n[^\n]*)?while backward runs \\(the default\\)")
    message(FATAL_ERROR "--help does not say that --overlap is the default")
  endif()
  execute_process(COMMAND ${TUTORIAL} --overlap --no-overlap
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "--overlap excludes --no-overlap")
    message(FATAL_ERROR "--overlap --no-overlap was not refused: ${out}${err}")
  endif()
  message("--help says what the defaults are")
elseif(MODE STREQUAL "diverge")
  # At 2^24 the second step's grads overflow and Adam turns the weights
  # into nan. The run exits with status 1; its test accuracy is nan, not
  # the 100% that a nan network scores (no comparison with nan is true).
  execute_process(COMMAND ${TUTORIAL} --batch-size 32 --iterations 5
                          --loss-scale 16777216 --checkpoint d.h5
    WORKING_DIRECTORY ${WORK_DIR}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${TUTORIAL} --batch-size 32 --iterations 5 --loss-scale "
          "16777216 --checkpoint d.h5\n${out}${err}")
  if("${out}${err}" MATCHES "apt-get install dataset-fashion-mnist")
    message("SKIPPED: Fashion-MNIST is not installed "
            "(apt-get install dataset-fashion-mnist)")
    cmake_language(EXIT 0)
  endif()
  expect_equal("exit status of a run whose loss is nan" "${rc}" 1)
  if(NOT out MATCHES "no test after step 5: the weights are not finite" OR
     NOT out MATCHES "RESULT [^\n]* test_accuracy=nan ")
    message(FATAL_ERROR "a run with nan weights reported a test accuracy")
  endif()
  message("the diverged run exited with status 1 and no test accuracy")
else()
  message(FATAL_ERROR "MODE must be run, resume, updater, in_backward, explain, main, main_ranks, convert, help or diverge")
endif()
