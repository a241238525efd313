// Every update rule, with the number of state arrays it is applied with: the
// one list from which a device backend builds its kernels (solvers/cuda/
// instantiates one per entry) and apply_rule finds a rule's slot. A rule
// applied with a (type, state count) not listed here fails to compile, so a
// device backend can never lack the kernel of a rule a solver uses.
// Adding a rule: its MG_HD functor in the solver's header, one entry here.
#pragma once

#include <type_traits>

/// X(rule type, number of state arrays), one per way a rule is applied.
#define MG_UPDATE_RULES(X) \
  X(WeightDecayRule, 0)    \
  X(SgdRule, 0)            \
  X(MomentumRule, 1)       \
  X(SgdWRule, 1)           \
  X(NesterovRule, 1)       \
  X(LionRule, 1)           \
  X(AdagradRule, 1)        \
  X(RmspropRule, 1)        \
  X(LarsRule, 1)           \
  X(AdamRule, 2)           \
  X(AdamaxRule, 2)         \
  X(AdadeltaRule, 2)       \
  X(AdaBoundRule, 2)       \
  X(AdaBoundRule, 3)       \
  X(AdaBeliefRule, 2)      \
  X(AdaBeliefRule, 3)      \
  X(LambMomentsRule, 2)    \
  X(LambStepRule, 2)       \
  X(AmsgradRule, 3)        \
  X(RmspropGravesRule, 3)

namespace mg {

#define MG_DECLARE_RULE(R, N) struct R;
MG_UPDATE_RULES(MG_DECLARE_RULE)
#undef MG_DECLARE_RULE

namespace detail {

/// The number of entries in MG_UPDATE_RULES.
inline constexpr int kNumRuleSlots = 0
#define MG_COUNT_RULE(R, N) +1
    MG_UPDATE_RULES(MG_COUNT_RULE)
#undef MG_COUNT_RULE
    ;

/// The position of (Rule, NS) in MG_UPDATE_RULES, or -1 when it is not
/// listed.
template <class Rule, int NS>
constexpr int rule_slot() {
  int slot = 0, found = -1;
#define MG_FIND_RULE(R, N)                              \
  if (std::is_same_v<Rule, R> && NS == N) found = slot; \
  ++slot;
  MG_UPDATE_RULES(MG_FIND_RULE)
#undef MG_FIND_RULE
  return found;
}

}  // namespace detail

}  // namespace mg
