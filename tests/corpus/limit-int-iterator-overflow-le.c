// expect: - overflow
// options: --size N=2147483647 --target openmp --no-check
void f(int N, double A[4]) {
  for (int i = 0; i <= N; i++)
    A[i % 4] += 1.0;
}
