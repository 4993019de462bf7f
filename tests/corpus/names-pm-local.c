// expect: 5:12 reserved
// options: --size N=8
void f(int N, double A[N]) {
  for (int i = 0; i < N; i++) {
    double pm_t = 2.0 * A[i];
    A[i] = pm_t;
  }
}
