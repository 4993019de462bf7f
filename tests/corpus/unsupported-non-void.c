// expect: 6:3 must be return
// options: --size N=8
// A function that returns a value must end with return (the value is a result:
// docs/guide/c-subset.md); this one never returns.
int f(int N, double A[N]) {
  A[0] = 1.0;
}
