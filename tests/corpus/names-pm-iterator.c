// expect: 4:12 reserved
// options: --size N=8
void f(int N, double A[N]) {
  for (int pm_i = 0; pm_i < N; pm_i++)
    A[pm_i] = 1.0;
}
