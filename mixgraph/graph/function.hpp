// The Function base: what every function implements, whatever its backend.
//
// It lives in graph/ because the graph engine calls it (arrows point down);
// the registry, the precision policy and the functions are in functions/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/graph/function_args.hpp>
#include <mixgraph/graph/function_decl.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

using Variables = std::vector<Variable*>;

/// A function of the graph. setup() checks the inputs and sets the output
/// shapes; forward() computes outputs; backward() computes the grads of the
/// inputs with propagate_down[i] set, adding to them where accum[i] is set.
class Function {
 public:
  virtual ~Function() = default;

  /// Its declaration (names, ports, default precision); set by the
  /// registry when it creates the function.
  const FunctionDecl& decl() const { return *decl_; }
  void set_decl(const FunctionDecl& decl) { decl_ = &decl; }
  /// The registered name, PascalCase: "Affine".
  std::string name() const { return decl_->name; }
  /// How many inputs it takes: [min_inputs, max_inputs], from its ports.
  int min_inputs() const { return decl_->min_inputs(); }
  int max_inputs() const { return decl_->max_inputs(); }
  /// How many outputs it makes: its declared outputs, unless the options
  /// set the count (Split).
  virtual int num_outputs() const { return decl_->outputs.size; }
  /// How many outputs it makes from these inputs: num_outputs(), unless
  /// the options leave the count to the inputs (NNabla's Split: the size
  /// of x's axis; Meshgrid: one per input). Setup checks against it.
  virtual int num_outputs_for(const Variables& /*inputs*/) const {
    return num_outputs();
  }
  /// Whether backward reads input i's data (else clear_no_need_grad frees it).
  virtual bool grad_depends_input_data(int /*i*/) const { return true; }
  /// Whether backward reads output o's data.
  virtual bool grad_depends_output_data(int /*o*/) const { return false; }
  /// Whether backward may write input i's grad over its (single) output's
  /// grad: each element of the one read only for the same element of the
  /// other. Under clear_buffer the engine then gives both one buffer.
  virtual bool inplace_grad(int /*i*/) const { return false; }
  /// Whether forward may write its (single) output over input i: each
  /// output element computed from the same element of input i alone, read
  /// before it is written. Under clearing (Variable::forward's
  /// clear_buffer, clear_no_need_grad), the engine then gives the output the
  /// buffer of an input that would be freed right after this function.
  virtual bool inplace_data(int /*i*/) const { return false; }
  /// Whether an output's shape is a property of the inputs' data, not only
  /// of their shapes (NonZero, BoolGather, Unique). Such a function's setup
  /// reads the data at hand (zeros before any forward: the shapes it gives
  /// then are provisional), and its forward reshapes the outputs to what the
  /// data gives; the graph records the new shapes and sets up the functions
  /// below again, as after an input reshaped to a new batch size.
  virtual bool output_shape_depends_on_data() const { return false; }

  /// The declared port input i is given on: its position (the last port
  /// for a variadic tail), unless the function places its optional inputs
  /// by their count (FusedConvolution, NNabla's rule; known after setup).
  /// Everything that reads an input's port (its kind, its name) asks here.
  virtual int input_port(int i) const { return decl_->input_index(i); }
  const Port& input_decl(int i) const { return decl_->inputs[input_port(i)]; }

  /// The same function written in NNabla's own functions and connected to
  /// `inputs` (its outputs, in order), built in the default context: how
  /// the files whose readers know only those functions (.nnp, ONNX) hold a
  /// function of ours (its declaration's `composed`). Empty, the default,
  /// for a function written as itself.
  virtual std::vector<VariablePtr> composition(
      const std::vector<VariablePtr>& /*inputs*/) const {
    return {};
  }

  void setup(const Variables& inputs, const Variables& outputs);
  void forward(const Variables& inputs, const Variables& outputs);
  void backward(const Variables& inputs, const Variables& outputs,
                const std::vector<bool>& propagate_down,
                const std::vector<bool>& accum);

  /// The backend it was created for ("cpu:half"); set by the registry.
  const Backend& backend() const { return backend_; }
  void set_backend(const Backend& backend) { backend_ = backend; }
  /// The type it computes and stores in.
  Dtype dtype() const { return backend_.type; }
  /// The device of the context it was created in ("cpu", "cuda:0"); a
  /// device backend's kernels run there. Set by the registry.
  const std::string& device() const { return device_; }
  void set_device(const std::string& device) { device_ = device; }
  /// "[affine] ": the snake_case name, for error messages.
  std::string tag() const;
  /// The arguments it was created with (its options as values); set by the
  /// registry, written out by save_network.
  const FunctionArgs& args() const { return args_; }
  void set_args(FunctionArgs args) { args_ = std::move(args); }

 protected:
  virtual void setup_impl(const Variables& inputs,
                          const Variables& outputs) = 0;
  virtual void forward_impl(const Variables& inputs,
                            const Variables& outputs) = 0;
  virtual void backward_impl(const Variables& inputs, const Variables& outputs,
                             const std::vector<bool>& propagate_down,
                             const std::vector<bool>& accum) = 0;

 private:
  static const FunctionDecl kUndeclared;
  const FunctionDecl* decl_ = &kUndeclared;
  Backend backend_{"cpu", Dtype::f32};
  std::string device_ = "cpu";
  FunctionArgs args_;
};

/// A function made from an options struct: holds the options (opts_) and
/// hands them out (options()). A function class derives from it and
/// inherits its constructor:
///   class Prune : public FunctionWith<PruneOptions> {
///    public:
///     using FunctionWith::FunctionWith;
///     ...
///   };
/// Base is the class it extends (Function, or a shared base such as
/// Reduction); arguments after the options go to Base's constructor.
template <class Options, class Base = Function>
class FunctionWith : public Base {
 public:
  using options_type = Options;
  template <class... BaseArgs>
  explicit FunctionWith(const Options& opts, BaseArgs&&... base_args)
      : Base(std::forward<BaseArgs>(base_args)...), opts_(opts) {}
  const Options& options() const { return opts_; }

 protected:
  const Options opts_;
};

/// "(64, 10), (20, 5)": the shapes of several variables, for messages.
std::string shapes_str(const Variables& vars);

}  // namespace mg
